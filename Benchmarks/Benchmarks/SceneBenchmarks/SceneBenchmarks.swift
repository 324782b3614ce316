// Contact samples per second through `Scene.handle`, for kiosk scenes of 10 to 10,000 controls.
//
// One benchmark iteration feeds exactly `samplesPerIteration` contact samples (whole frames), and
// the configuration's scaling factor is that same number, so the scaled figures the tool prints
// (marked `*`) are per sample: wall clock = ns per sample, throughput = samples per second.
//
// Two workloads, both pre-generated from a fixed seed and fed in a loop with time moving forward:
// - "Taps and drags": taps and drags (began, several moves, ended) on random controls and on empty
//   space, sometimes two fingers at once, frames 8 ms apart like a 125 Hz touch controller;
// - "Hit-test touch-downs": touch-downs at uniformly random points, each lifted in the next frame,
//   so half of the samples are touch-downs that hit-test against the whole scene.
//
// Run from Benchmarks/: swift package --disable-sandbox benchmark (docs/performance.md).

import Benchmark
import TouchModel

/// Samples fed per benchmark iteration; also the scaling factor, so scaled figures are per sample.
let samplesPerIteration = BenchmarkScalingFactor.kilo.rawValue
/// Samples in one pre-generated workload before it repeats.
let workloadSamples = 100 * samplesPerIteration

let controlCounts = [10, 100, 1_000, 10_000]

/// Events and actions the scene produced (per iteration, so per `samplesPerIteration` samples).
let outputEntriesMetric = BenchmarkMetric.custom("Output entries (per 1000 samples)", useScalingFactor: false)
/// Diagnostics the scene produced (per iteration); the workload is valid input, so this stays near 0.
let diagnosticsMetric = BenchmarkMetric.custom("Diagnostics (per 1000 samples)", useScalingFactor: false)

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        // No .instructions: the build VM exposes no hardware performance counters (perf stat says
        // "not supported"), so the metric would stay empty.
        metrics: [.wallClock, .throughput, .mallocCountTotal, outputEntriesMetric, diagnosticsMetric],
        timeUnits: .nanoseconds,
        warmupIterations: 20,
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 1_000_000
    )

    for workload in Workload.Kind.allCases {
        for count in controlCounts {
            Benchmark("\(workload.rawValue), \(count) controls") { benchmark, runner in
                runner.run(benchmark)
            } setup: {
                try WorkloadRunner(kind: workload, controls: count)
            }
        }
    }
}

// MARK: - Running

/// A scene and its workload; each call to `run` feeds the next block of samples.
final class WorkloadRunner {
    private var scene: Scene
    private let frames: [Frame]
    /// Where each block of `samplesPerIteration` samples starts in `frames`.
    private let blockStarts: [Int]
    private let span: UInt64
    private var block = 0
    private var timeBase: UInt64 = 1_000_000

    init(kind: Workload.Kind, controls: Int) throws {
        scene = try KioskScene.make(controls: controls)
        let workload = Workload.make(kind, for: KioskScene.layout(controls: controls), samples: workloadSamples)
        frames = workload.frames
        span = workload.span
        blockStarts = workload.blockStarts(of: samplesPerIteration)
    }

    func run(_ benchmark: Benchmark) {
        let start = blockStarts[block]
        let end = block + 1 < blockStarts.count ? blockStarts[block + 1] : frames.count
        var entries = 0
        var diagnostics = 0
        for index in start..<end {
            var frame = frames[index]
            frame.time = Instant(microseconds: timeBase &+ frame.time.microseconds)
            let output = scene.handle(frame)
            entries &+= output.entries.count
            diagnostics &+= output.diagnostics.count
            blackHole(output)
        }
        block += 1
        if block == blockStarts.count {
            block = 0
            timeBase &+= span
        }
        benchmark.measurement(outputEntriesMetric, entries)
        benchmark.measurement(diagnosticsMetric, diagnostics)
    }
}

// MARK: - The scene

/// A kiosk: a grid of buttons over a 1920×1080 output with a few toggles and sliders, in four
/// clipping panels, on one screen, with explicit and nil-target actions.
enum KioskScene {
    static let width = 1920.0
    static let height = 1080.0

    struct Layout {
        /// The controls' rectangles, in declaration order.
        var rects: [Rect]
        var cellWidth: Double
        var cellHeight: Double
    }

    /// Roughly square cells in a 16:9 grid, one control per cell, each inset by 10 % of the cell on
    /// every side, so about a third of the output is empty space between controls.
    static func layout(controls count: Int) -> Layout {
        let columns = max(1, Int((Double(count) * width / height).squareRoot().rounded()))
        let rows = (count + columns - 1) / columns
        let cellWidth = width / Double(columns)
        let cellHeight = height / Double(rows)
        let rects = (0..<count).map { index in
            let column = Double(index % columns)
            let row = Double(index / columns)
            return Rect(
                x: column * cellWidth + 0.1 * cellWidth, y: row * cellHeight + 0.1 * cellHeight,
                width: 0.8 * cellWidth, height: 0.8 * cellHeight)
        }
        return Layout(rects: rects, cellWidth: cellWidth, cellHeight: cellHeight)
    }

    static func make(controls count: Int) throws -> Scene {
        let layout = layout(controls: count)
        let halfWidth = width / 2
        let halfHeight = height / 2
        var groups = [Group(id: "kiosk", target: "kiosk-handler")]
        for panel in 0..<4 {
            let shape = Rect(
                x: Double(panel % 2) * halfWidth, y: Double(panel / 2) * halfHeight, width: halfWidth,
                height: halfHeight)
            groups.append(
                Group(
                    id: "panel-\(panel)", parent: "kiosk", shape: .rect(shape),
                    target: panel.isMultiple(of: 2) ? "panel-handler" : nil))
        }
        let targets = [
            Target(name: "socket", respondsTo: ["press", "level", "toggled"]),
            Target(name: "panel-handler", respondsTo: ["feedback"]),
            Target(name: "kiosk-handler", respondsTo: ["navigate"]),
            Target(name: "screen-handler", respondsTo: ["idle-reset"]),
            Target(name: "app", respondsTo: ["feedback", "idle-reset"]),
        ]
        let controls = layout.rects.enumerated().map { index, rect in
            let center = rect.center
            let panel = (center.x < halfWidth ? 0 : 1) + (center.y < halfHeight ? 0 : 2)
            var actions = TargetActionTable()
            let kind: Control.Kind
            var target: String?
            switch index % 10 {
            case 3:
                kind = .slider(Control.Slider(minimum: 0, maximum: 100, isContinuous: index % 20 == 3))
                actions.add(target: .target("socket"), action: "level", for: .valueChanged)
                actions.add(target: .responderChain, action: "feedback", for: .touchDown)
            case 7:
                kind = .toggle
                target = "socket"
                actions.add(target: .responderChain, action: "toggled", for: .valueChanged)
                actions.add(target: .responderChain, action: "feedback", for: .touchDown)
            case 0:
                kind = .button  // no actions: events only
            default:
                kind = .button
                actions.add(target: .target("socket"), action: "press", for: .touchUpInside)
                actions.add(target: .responderChain, action: "feedback", for: [.touchDown, .touchDragExit, .touchDragEnter])
                if index % 5 == 1 {
                    actions.add(target: .responderChain, action: "navigate", for: .primaryActionTriggered)
                }
                if index % 10 == 9 {
                    // Nobody responds to it: an unhandled action, resolved all the way up the chain.
                    actions.add(target: .responderChain, action: "beep", for: .touchUpOutside)
                }
            }
            return Control(
                id: "control-\(index)", kind: kind, shape: .rect(rect), parent: "panel-\(panel)", target: target,
                actions: actions)
        }
        return try Scene(
            controls: controls,
            groups: groups,
            screens: [Screen(id: "main", groups: ["kiosk"], target: "screen-handler")],
            applicationTarget: "app",
            targets: targets
        )
    }
}

// MARK: - The workload

/// A deterministic sequence of frames; every contact that begins also ends within it.
struct Workload {
    enum Kind: String, CaseIterable {
        case mixed = "Taps and drags"
        case hitTest = "Hit-test touch-downs"
    }

    /// Frame times start at 0 (microseconds) and grow.
    var frames: [Frame] = []
    /// How far time moves each time the workload repeats.
    var span: UInt64 = 0

    static let frameInterval: UInt64 = 8_000

    static func make(_ kind: Kind, for layout: KioskScene.Layout, samples: Int) -> Workload {
        var generator = Generator(layout: layout)
        switch kind {
        case .mixed: generator.mixed(samples: samples)
        case .hitTest: generator.hitTests(samples: samples)
        }
        return generator.finish(toMultipleOf: samplesPerIteration)
    }

    /// The frame indices at which each block of `size` samples starts. Frames are split (two
    /// frames at the same time) where a block boundary would fall inside one.
    func blockStarts(of size: Int) -> [Int] {
        var starts: [Int] = []
        var count = 0
        for (index, frame) in frames.enumerated() {
            if count % size == 0 { starts.append(index) }
            count += frame.samples.count
        }
        return starts
    }

    var sampleCount: Int { frames.reduce(0) { $0 + $1.samples.count } }
}

/// Builds workloads: gestures on lanes (fingers), merged into frames.
struct Generator {
    let layout: KioskScene.Layout
    var random = SplitMix64(seed: 0x7011_C4D0)
    var frames: [Frame] = []
    var time: UInt64 = 0
    var sampleCount = 0

    init(layout: KioskScene.Layout) {
        self.layout = layout
    }

    /// One finger's remaining positions: the first is the touch-down, the last the lift.
    struct Gesture {
        var contact: ContactID
        var path: [Point]
        var next = 0
    }

    mutating func mixed(samples: Int) {
        var active: [Gesture] = []
        while sampleCount < samples || !active.isEmpty {
            if active.isEmpty {
                time += 100_000 + random.next(below: 500_000)  // 0.1–0.6 s between touches
                active.append(Gesture(contact: 0, path: gesturePath()))
            } else if active.count == 1, sampleCount < samples, random.next(below: 100) < 4 {
                // A second finger lands while the first is down.
                active.append(Gesture(contact: active[0].contact == 0 ? 1 : 0, path: gesturePath()))
            }
            var samplesOfFrame: [ContactSample] = []
            for index in active.indices {
                let gesture = active[index]
                let point = gesture.path[gesture.next]
                if gesture.next == 0 {
                    samplesOfFrame.append(.began(gesture.contact, at: point))
                } else if gesture.next == gesture.path.count - 1 {
                    // libinput's touch-up carries no position: the scene uses the last one.
                    samplesOfFrame.append(.ended(gesture.contact))
                } else {
                    samplesOfFrame.append(.moved(gesture.contact, to: point))
                }
                active[index].next += 1
            }
            active.removeAll { $0.next == $0.path.count }
            append(samplesOfFrame)
            time += Workload.frameInterval
        }
    }

    /// Touch-downs at uniformly random points on the output, each lifted in the next frame.
    mutating func hitTests(samples: Int) {
        while sampleCount < samples {
            tap(at: randomPoint())
        }
    }

    /// A tap on a random point: began, then ended one frame later.
    mutating func tap(at point: Point) {
        time += Workload.frameInterval
        append([.began(0, at: point)])
        time += Workload.frameInterval
        append([.ended(0)])
    }

    /// Adds taps (2 samples) and taps with one move (3 samples) until the count is a multiple of
    /// `size`, so that blocks of `size` samples tile the workload exactly.
    mutating func finish(toMultipleOf size: Int) -> Workload {
        while sampleCount % size != 0 {
            let missing = size - sampleCount % size
            let point = randomPoint()
            if missing == 1 || missing == 3 {
                time += Workload.frameInterval
                append([.began(0, at: point)])
                time += Workload.frameInterval
                append([.moved(0, to: Point(x: point.x + 1, y: point.y))])
                time += Workload.frameInterval
                append([.ended(0)])
            } else {
                tap(at: point)
            }
        }
        var workload = Workload()
        // Split two-sample frames that straddle a block boundary.
        var count = 0
        for frame in frames {
            if frame.samples.count > 1, count / size != (count + frame.samples.count - 1) / size {
                for sample in frame.samples {
                    workload.frames.append(Frame(time: frame.time, samples: [sample]))
                }
            } else {
                workload.frames.append(frame)
            }
            count += frame.samples.count
        }
        workload.span = time + 500_000
        return workload
    }

    private mutating func append(_ samples: [ContactSample]) {
        frames.append(Frame(time: Instant(microseconds: time), samples: samples))
        sampleCount += samples.count
    }

    private mutating func randomPoint() -> Point {
        Point(x: random.unit() * KioskScene.width, y: random.unit() * KioskScene.height)
    }

    /// A random point inside a random control.
    private mutating func pointOnControl() -> (Point, Rect) {
        let rect = layout.rects[Int(random.next(below: UInt64(layout.rects.count)))]
        let point = Point(x: rect.minX + random.unit() * rect.width, y: rect.minY + random.unit() * rect.height)
        return (point, rect)
    }

    /// The positions of one gesture, touch-down first and lift last:
    /// - 60 %: a tap on a control (touch-down, 0–2 small jitters, lift);
    /// - 25 %: a drag from a control, 4–12 moves of up to a fifth of a cell each, often leaving it;
    /// - 15 %: a touch at a random point of the output (empty space or a control), 0–3 jitters.
    private mutating func gesturePath() -> [Point] {
        let roll = random.next(below: 100)
        let start: Point
        var moves: Int
        var step = Point(x: 0, y: 0)
        var jitter = 2.0
        if roll < 60 {
            start = pointOnControl().0
            moves = Int(random.next(below: 3))
        } else if roll < 85 {
            start = pointOnControl().0
            moves = 4 + Int(random.next(below: 9))
            step = Point(
                x: (random.unit() - 0.5) * 0.4 * layout.cellWidth, y: (random.unit() - 0.5) * 0.4 * layout.cellHeight)
            jitter = 1
        } else {
            start = randomPoint()
            moves = Int(random.next(below: 4))
        }
        var path = [start]
        var point = start
        for _ in 0..<moves {
            point = Point(
                x: point.x + step.x + (random.unit() - 0.5) * 2 * jitter,
                y: point.y + step.y + (random.unit() - 0.5) * 2 * jitter)
            path.append(point)
        }
        path.append(point)  // the lift (sent without a position, as libinput does)
        return path
    }
}

/// A small deterministic generator (SplitMix64), so every run feeds the same workload.
struct SplitMix64 {
    var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in 0..<bound (bound > 0; the modulo bias is irrelevant here).
    mutating func next(below bound: UInt64) -> UInt64 {
        next() % bound
    }

    /// Uniform in [0, 1).
    mutating func unit() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }
}
