import CDRM
import Glibc

/// The display `touchd calibrate` draws on when no compositor runs: one dumb buffer on the first connected connector,
/// scanned out with the connector's preferred mode. The display's previous picture is put back in `deinit`.
///
/// Not thread-safe; used by the calibrate command's one thread.
final class DRMScreen {
    private var screen = touchd_drm_screen()

    var width: Int { Int(screen.width) }
    var height: Int { Int(screen.height) }

    /// Opens `path` and shows a black screen. Throws why not: no such device, no connected display, or another
    /// process (a compositor) is DRM master, so that the caller can fall back to the terminal alone.
    init(path: String) throws(DRMFailure) {
        var why = [CChar](repeating: 0, count: 256)
        guard touchd_drm_open(path, &screen, &why, why.count) == 0 else {
            throw DRMFailure(why)
        }
        guard touchd_drm_show(&screen, &why, why.count) == 0 else {
            touchd_drm_close(&screen)
            throw DRMFailure(why, prefix: "\(path): ")
        }
    }

    deinit { touchd_drm_close(&screen) }

    /// Copies `canvas` (the screen's size) into the scanout buffer.
    func present(_ canvas: CalibrationCanvas) {
        guard let base = screen.pixels, canvas.width == width, canvas.height == height else { return }
        let pitch = Int(screen.pitch)
        let raw = UnsafeMutableRawPointer(base)
        canvas.pixels.withUnsafeBytes { source in
            for row in 0..<height {
                (raw + row * pitch).copyMemory(
                    from: source.baseAddress! + row * width * 4, byteCount: width * 4)
            }
        }
        touchd_drm_flush(&screen)
    }

    /// What the scanout buffer holds now.
    func snapshot() -> CalibrationCanvas? {
        guard let base = screen.pixels, var canvas = CalibrationCanvas(width: width, height: height) else {
            return nil
        }
        let bytes = UnsafeRawBufferPointer(start: UnsafeRawPointer(base), count: Int(clamping: screen.size))
        canvas.load(from: bytes, pitch: Int(screen.pitch))
        return canvas
    }
}

struct DRMFailure: Error, CustomStringConvertible {
    var description: String

    /// From the C side's NUL-terminated message.
    init(_ message: [CChar], prefix: String = "") {
        description = prefix + String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
