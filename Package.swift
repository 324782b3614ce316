// swift-tools-version: 6.2
import PackageDescription

/// Our own targets build with every warning as an error (dependencies are not affected).
let strict: [SwiftSetting] = [.treatAllWarnings(as: .error)]

/// Release builds put each function in its own section. What it buys, measured on the static release build idle with
/// config/kiosk.toml: 17,808 kB resident against 19,548 kB without (the binary's own pages 10,952 against 12,680 kB),
/// room under the 20 MB an idle touchd must stay within (scripts/idle-cost). The functions a wake-up touches then lie
/// on fewer pages.
let functionSections: [SwiftSetting] = [
    .unsafeFlags(["-Xfrontend", "-function-sections"], .when(platforms: [.linux], configuration: .release))
]

let package = Package(
    name: "touchd",
    products: [
        .executable(name: "touchd", targets: ["TouchDaemon"]),
        .executable(name: "touchd-e2e", targets: ["TouchdEndToEnd"]),
        .library(name: "TouchModel", targets: ["TouchModel"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // libinput, libudev and libevdev through one module map; only Sources/TouchDaemon/Input imports it.
        .systemLibrary(
            name: "CLibinput",
            pkgConfig: "libinput libudev libevdev",
            providers: [.apt(["libinput-dev", "libudev-dev", "libevdev-dev"])]
        ),
        // TOML 1.0 for untrusted configuration files: the Swift standard library only, every size bounded, positions
        // kept for every key. Replaces TOMLKit, whose toml++ trees were never freed (memory grew on every reload) and
        // which overflowed the stack on deep dotted keys.
        .target(name: "TOML", swiftSettings: strict),
        // libdrm: `touchd calibrate` draws its targets on the display when no compositor holds it. Only
        // Sources/TouchDaemon/Calibration/DRMScreen.swift imports it.
        .systemLibrary(name: "CDRM", pkgConfig: "libdrm", providers: [.apt(["libdrm-dev"])]),
        // signalfd and eventfd, which Swift's Glibc module leaves out.
        .systemLibrary(name: "CLinux"),
        // posix_spawn with its GNU extensions (a new session, closefrom, chdir) and pidfd_open(2), which Swift's Glibc
        // module leaves out: how the command runner starts and watches children, with no thread pool and no timer
        // (swift-subprocess's monitor armed libdispatch's 1 Hz timer for the life of the process, issue 17).
        .target(name: "CProcess"),
        // The pure model: the Swift standard library only, time passed in, no I/O.
        // Floating-point rounding needs libm, which nothing else pulls in for a program that links only the model.
        .target(
            name: "TouchModel",
            swiftSettings: strict + functionSections,
            linkerSettings: [.linkedLibrary("m", .when(platforms: [.linux]))]
        ),
        .executableTarget(
            name: "TouchDaemon",
            dependencies: [
                "TouchModel",
                "TOML",
                "CLibinput",
                "CDRM",
                "CLinux",
                "CProcess",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict + functionSections,
            // Release builds link with lld and pack their relative relocations (DT_RELR, glibc 2.36 and later, as on
            // Debian 12): the static binary's 1.9 MB of RELA entries, all read at every start, shrink to 15 KB, and a
            // running touchd's resident memory by about 1.4 MB, room under the 20 MB an idle touchd must stay within.
            linkerSettings: [
                .unsafeFlags(
                    ["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"],
                    .when(platforms: [.linux], configuration: .release))
            ]
        ),
        // The end-to-end driver: runs inside the test VM (scripts/vm), creates a uinput touchscreen, runs touchd and
        // checks what reaches a socket target. Not installed; only the end-to-end test uses it.
        .executableTarget(
            name: "TouchdEndToEnd",
            dependencies: ["CLibinput", "CLinux"],
            swiftSettings: strict
        ),
        // What the test targets share: the seeded random generator, a manual clock, `eventually`.
        .target(name: "TestKit", path: "Tests/TestKit", swiftSettings: strict),
        .testTarget(
            name: "TouchModelTests",
            dependencies: ["TouchModel", "TestKit"],
            resources: [.copy("Scenarios")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "TouchDaemonTests",
            dependencies: ["TouchDaemon", "TOML", "TestKit"],
            resources: [.copy("BrokenConfigs"), .copy("Golden")],
            swiftSettings: strict
        ),
        // Boots the test VM (scripts/vm) and runs touchd-e2e in it against the freshly built touchd.
        .testTarget(
            name: "EndToEndTests",
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)
