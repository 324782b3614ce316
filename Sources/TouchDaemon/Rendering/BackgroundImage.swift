import Foundation
import Glibc

/// `touchd render --background IMAGE`: a screenshot to lay the layout over, **embedded** in the SVG as a base64
/// `data:` URI.
///
/// Embedded rather than referenced: the SVG stays whole when it is moved or mailed, viewers that refuse file
/// references (browsers, librsvg outside the SVG's directory) still show it, and the path, which is untrusted input,
/// never reaches the SVG text at all. Only the file's bytes do, as base64, after checks: it must be a regular file
/// (opened without blocking, so a FIFO cannot hang render, and never a device), at most ``maximumBytes``, and a PNG,
/// JPEG, GIF or WebP by its first bytes, which also gives the `data:` URI's media type.
struct BackgroundImage: Equatable {
    /// Screenshots of 8K panels stay well below this.
    static let maximumBytes = 32 << 20

    var mediaType: String
    var bytes: [UInt8]
    /// The pixel size, when the format says it in its header (PNG, GIF): render notes a size that differs from the
    /// output's, since the image is stretched onto the output.
    var size: (width: Int, height: Int)?

    static func == (a: BackgroundImage, b: BackgroundImage) -> Bool {
        a.mediaType == b.mediaType && a.bytes == b.bytes && a.size?.width == b.size?.width
            && a.size?.height == b.size?.height
    }

    /// Why the image was refused; `description` completes "PATH: error: ". `status` is the exit status.
    struct Failure: Error, Equatable, CustomStringConvertible {
        var description: String
        var status: Int32
    }

    static func load(path: String) -> Result<BackgroundImage, Failure> {
        guard !path.isEmpty, !path.utf8.contains(0) else {
            return .failure(Failure(description: "not a file name", status: ExitStatus.noInput))
        }
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard descriptor >= 0 else {
            return .failure(
                Failure(description: "cannot open the background: \(message(errno))", status: ExitStatus.noInput))
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            return .failure(
                Failure(description: "cannot read the background: \(message(errno))", status: ExitStatus.noInput))
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            return .failure(
                Failure(
                    description: "the background is \(OutputFile.kind(of: status.st_mode)), not an image file",
                    status: ExitStatus.data))
        }
        guard status.st_size <= maximumBytes else {
            return .failure(
                Failure(
                    description: "the background is \(status.st_size) bytes; at most \(maximumBytes) (32 MiB) are "
                        + "embedded", status: ExitStatus.data))
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(
                    Failure(description: "cannot read the background: \(message(errno))", status: ExitStatus.noInput))
            }
            if count == 0 { break }
            bytes += chunk[0..<count]
            // The file may grow after fstat: the limit holds for what is read.
            guard bytes.count <= maximumBytes else {
                return .failure(
                    Failure(description: "the background grew beyond 32 MiB while it was read", status: ExitStatus.data)
                )
            }
        }
        return image(bytes).map { .success($0) }
            ?? .failure(
                Failure(
                    description: "the background is not a PNG, JPEG, GIF or WebP image (by its first bytes)",
                    status: ExitStatus.data))
    }

    /// The image in `bytes`, recognised by its signature; nil for anything else.
    static func image(_ bytes: [UInt8]) -> BackgroundImage? {
        func starts(_ signature: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + signature.count && Array(bytes[offset..<(offset + signature.count)]) == signature
        }
        func bigEndian32(_ offset: Int) -> Int {
            bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
        }
        func littleEndian16(_ offset: Int) -> Int {
            Int(bytes[offset]) | Int(bytes[offset + 1]) << 8
        }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), bytes.count >= 24,
            starts(Array("IHDR".utf8), at: 12)
        {
            return BackgroundImage(mediaType: "image/png", bytes: bytes, size: (bigEndian32(16), bigEndian32(20)))
        }
        if starts([0xFF, 0xD8, 0xFF]) { return BackgroundImage(mediaType: "image/jpeg", bytes: bytes, size: nil) }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)), bytes.count >= 10 {
            return BackgroundImage(mediaType: "image/gif", bytes: bytes, size: (littleEndian16(6), littleEndian16(8)))
        }
        if starts(Array("RIFF".utf8)), starts(Array("WEBP".utf8), at: 8) {
            return BackgroundImage(mediaType: "image/webp", bytes: bytes, size: nil)
        }
        return nil
    }

    /// The `data:` URI: only base64's alphabet follows the media type, so nothing in the file can end the attribute.
    var dataURI: String {
        "data:\(mediaType);base64,\(Data(bytes).base64EncodedString())"
    }

    private static func message(_ error: Int32) -> String { String(cString: strerror(error)) }
}
