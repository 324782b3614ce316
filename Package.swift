// swift-tools-version: 6.2
import PackageDescription

/// Our own targets build with every warning as an error (dependencies are not affected).
let strict: [SwiftSetting] = [.treatAllWarnings(as: .error)]

let package = Package(
    name: "touchd",
    products: [
        .executable(name: "touchd", targets: ["TouchDaemon"]),
        .library(name: "TouchModel", targets: ["TouchModel"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
    ],
    targets: [
        // libinput, libudev and libevdev through one module map; only Sources/TouchDaemon/Input imports it.
        .systemLibrary(
            name: "CLibinput",
            pkgConfig: "libinput libudev libevdev",
            providers: [.apt(["libinput-dev", "libudev-dev", "libevdev-dev"])]
        ),
        // The pure model: the Swift standard library only, time passed in, no I/O.
        // Floating-point rounding needs libm, which nothing else pulls in for a program that links only the model.
        .target(
            name: "TouchModel",
            swiftSettings: strict,
            linkerSettings: [.linkedLibrary("m", .when(platforms: [.linux]))]
        ),
        .executableTarget(
            name: "TouchDaemon",
            dependencies: [
                "TouchModel",
                "CLibinput",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "TOMLKit", package: "TOMLKit"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "TouchModelTests",
            dependencies: ["TouchModel"],
            resources: [.copy("Scenarios")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "TouchDaemonTests",
            dependencies: ["TouchDaemon"],
            resources: [.copy("BrokenConfigs"), .copy("Golden")],
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)
