import TouchModel

/// The picture `touchd calibrate` shows: a black screen, the current target as a white crosshair in a ring, the
/// targets already touched as small green marks, and a progress bar of one box per target (filled when taken) at the
/// bottom. Pure: pixels in memory (32-bit XRGB, as a DRM dumb buffer holds them), drawn in screen pixels; what maps
/// output pixels onto the screen is the caller's scale.
struct CalibrationCanvas: Hashable, Sendable {
    let width: Int
    let height: Int
    /// Row-major, `width × height`, 0x00RRGGBB.
    private(set) var pixels: [UInt32]

    static let black: UInt32 = 0x000000
    static let white: UInt32 = 0xFFFFFF
    static let green: UInt32 = 0x33CC55
    static let grey: UInt32 = 0x606060
    static let yellow: UInt32 = 0xFFCC00

    /// Nil for a size of no pixels or one beyond 16384 on a side.
    init?(width: Int, height: Int) {
        guard (1...16384).contains(width), (1...16384).contains(height) else { return nil }
        self.width = width
        self.height = height
        pixels = Array(repeating: Self.black, count: width * height)
    }

    mutating func clear() {
        pixels.withUnsafeMutableBufferPointer { $0.update(repeating: Self.black) }
    }

    /// Fills the rectangle, clipped to the canvas. Coordinates that are not finite draw nothing.
    mutating func fill(x: Double, y: Double, width w: Double, height h: Double, colour: UInt32) {
        guard x.isFinite, y.isFinite, w.isFinite, h.isFinite else { return }
        let x0 = max(0, min(Double(width), x.rounded(.down)))
        let y0 = max(0, min(Double(height), y.rounded(.down)))
        let x1 = max(0, min(Double(width), (x + w).rounded(.down)))
        let y1 = max(0, min(Double(height), (y + h).rounded(.down)))
        // Clamped to 0…width and 0…height above, so the conversions are exact.
        let (left, top, right, bottom) = (Int(x0), Int(y0), Int(x1), Int(y1))
        guard left < right, top < bottom else { return }
        let stride = width
        pixels.withUnsafeMutableBufferPointer { buffer in
            for row in top..<bottom {
                let base = row * stride
                UnsafeMutableBufferPointer(rebasing: buffer[(base + left)..<(base + right)]).update(repeating: colour)
            }
        }
    }

    /// A crosshair at `point`: two bars `size` long and `thickness` thick, and a square ring around the centre.
    mutating func crosshair(at point: Point, size: Double, thickness: Double, colour: UInt32) {
        let half = size / 2
        fill(x: point.x - half, y: point.y - thickness / 2, width: size, height: thickness, colour: colour)
        fill(x: point.x - thickness / 2, y: point.y - half, width: thickness, height: size, colour: colour)
        let ring = size / 4
        for (dx, dy, w, h) in [
            (-ring, -ring, 2 * ring, thickness), (-ring, ring - thickness, 2 * ring, thickness),
            (-ring, -ring, thickness, 2 * ring), (ring - thickness, -ring, thickness, 2 * ring),
        ] {
            fill(x: point.x + dx, y: point.y + dy, width: w, height: h, colour: colour)
        }
    }

    /// The whole screen for target `current` of `targets` (screen pixels), those before it taken, with `lines` of
    /// instructions centred above the middle.
    mutating func draw(targets: [Point], current: Int, lines: [String] = []) {
        clear()
        let unit = max(4, Double(min(width, height)) / 40)
        for (index, target) in targets.enumerated() where index < current {
            crosshair(at: target, size: unit, thickness: max(2, unit / 8), colour: Self.green)
        }
        if targets.indices.contains(current) {
            crosshair(at: targets[current], size: unit * 3, thickness: max(2, unit / 6), colour: Self.white)
            fill(
                x: targets[current].x - 1, y: targets[current].y - 1, width: 3, height: 3, colour: Self.yellow)
        }
        // Instructions: centred from a fifth of the way down, between the corner targets and the centre one, each
        // line within nine tenths of the width.
        let widest = lines.map { Self.textWidth($0, scale: 1) }.max() ?? 0
        let fitting = widest > 0 ? (0.9 * Double(width) / widest).rounded(.down) : 1
        let scale = max(1, min((unit / 5).rounded(.down), fitting))
        for (index, line) in lines.enumerated() {
            let x = (Double(width) - Self.textWidth(line, scale: scale)) / 2
            text(line, x: x, y: Double(height) / 5 + Double(index) * 10 * scale, scale: scale, colour: Self.white)
        }
        // Progress: one box per target, centred near the bottom edge.
        let box = unit
        let gap = unit / 2
        let total = Double(targets.count) * box + Double(max(0, targets.count - 1)) * gap
        let left = (Double(width) - total) / 2
        let top = Double(height) - 2.5 * box
        for index in targets.indices {
            let x = left + Double(index) * (box + gap)
            let colour = index < current ? Self.green : index == current ? Self.white : Self.grey
            fill(x: x, y: top, width: box, height: box, colour: colour)
            if index > current {
                fill(x: x + 2, y: top + 2, width: box - 4, height: box - 4, colour: Self.black)
            }
        }
    }

    /// Copies `rows` of `source` (XRGB, `pitch` bytes a row) into the canvas: a screenshot of the scanout buffer.
    mutating func load(from source: UnsafeRawBufferPointer, pitch: Int) {
        guard pitch >= width * 4, source.count >= pitch * height, let base = source.baseAddress else { return }
        let rowBytes = width * 4
        let rows = height
        pixels.withUnsafeMutableBytes { target in
            for row in 0..<rows {
                (target.baseAddress! + row * rowBytes).copyMemory(from: base + row * pitch, byteCount: rowBytes)
            }
        }
    }

    /// A binary PPM (P6), for `--screenshot`: any image tool reads it (`convert shot.ppm shot.png`).
    var ppm: [UInt8] {
        let header = Array("P6\n\(width) \(height)\n255\n".utf8)
        let count = pixels.count
        let body = [UInt8](unsafeUninitializedCapacity: count * 3) { buffer, initialised in
            pixels.withUnsafeBufferPointer { source in
                for index in 0..<count {
                    let pixel = source[index]
                    buffer[3 * index] = UInt8(truncatingIfNeeded: pixel >> 16)
                    buffer[3 * index + 1] = UInt8(truncatingIfNeeded: pixel >> 8)
                    buffer[3 * index + 2] = UInt8(truncatingIfNeeded: pixel)
                }
            }
            initialised = count * 3
        }
        return header + body
    }
}
