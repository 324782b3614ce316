// swift-tools-version: 6.2
// Benchmarks for touchd, kept out of the main package so that its build stays light.
// Run from this directory: swift package --disable-sandbox benchmark (see docs/performance.md).
import PackageDescription

/// SwiftPM names a path dependency after its directory, so the main package's identity is the name
/// of the clone's directory ("main", "touchd", ...), not a fixed string.
let mainPackage = Context.packageDirectory.split(separator: "/").dropLast().last.map(String.init) ?? "touchd"

let package = Package(
    name: "touchd-benchmarks",
    dependencies: [
        .package(path: ".."),
        // Only the MallocInterposer trait: the default RuntimeInterposer trait would pull in
        // ordo-one/swift-runtime-interposer (Linux, Swift 6.3), which is not needed here.
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "SceneBenchmarks",
            dependencies: [
                .product(name: "TouchModel", package: mainPackage),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/SceneBenchmarks",
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark")
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
