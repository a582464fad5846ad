import DouctlCore
import DouctlHTTP
import DouctlSystem

/// Pictures drawn in the terminal itself, for `shuo get --images`. The protocol is taken only
/// from what the terminal says about itself in the environment (TERM, TERM_PROGRAM,
/// LC_TERMINAL, KITTY_WINDOW_ID) and only when stdout is that terminal: never guessed, never
/// sent into a pipe or a file, and never through tmux or screen, which would need their own
/// pass-through wrapping. Elsewhere the feed view names the pictures, as it always does.
enum InlineImages {
    enum Graphics: Equatable {
        /// iTerm2's OSC 1337 File protocol (iTerm2, WezTerm): any format the terminal decodes.
        case iTerm2
        /// kitty's graphics protocol (kitty, Ghostty): PNG only without decoding here.
        case kitty
    }

    /// A picture larger than this is named, not drawn: a terminal is no place for 100 MB.
    static let maximumBytes = 8 << 20

    static func graphics(environment: [String: String], stdoutIsTerminal: Bool) -> Graphics? {
        guard stdoutIsTerminal, environment["TMUX"] == nil, !(environment["TERM"] ?? "").hasPrefix("screen") else { return nil }
        let program = environment["TERM_PROGRAM"] ?? ""
        if environment["TERM"] == "xterm-kitty" || environment["KITTY_WINDOW_ID"] != nil || program == "ghostty" { return .kitty }
        if program == "iTerm.app" || program == "WezTerm" || environment["LC_TERMINAL"] == "iTerm2" { return .iTerm2 }
        return nil
    }

    /// The escape sequence that draws `bytes`, then a newline; nil when this terminal cannot
    /// show that format or the picture is too large.
    static func sequence(_ bytes: [UInt8], name: String, graphics: Graphics) -> [UInt8]? {
        guard !bytes.isEmpty, bytes.count <= maximumBytes else { return nil }
        switch graphics {
        case .iTerm2:
            let fileName = Base64.encode(Array(name.utf8))
            let text = "\u{1B}]1337;File=name=\(fileName);size=\(bytes.count);inline=1;preserveAspectRatio=1:" + Base64.encode(bytes) + "\u{07}\n"
            return Array(text.utf8)
        case .kitty:
            guard bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) else { return nil }
            // The payload goes in chunks of at most 4096 base64 bytes; m=1 means more follow.
            let payload = Array(Base64.encode(bytes).utf8)
            var out: [UInt8] = []
            var offset = 0
            while offset < payload.count {
                let end = min(offset + 4096, payload.count)
                let control = (offset == 0 ? "a=T,f=100," : "") + "m=\(end < payload.count ? 1 : 0)"
                out += Array("\u{1B}_G\(control);".utf8) + payload[offset..<end] + Array("\u{1B}\\".utf8)
                offset = end
            }
            return out + [0x0A]
        }
    }

    /// Draws each picture of `status` after its view; a picture that cannot be fetched or
    /// shown is named on stderr instead. Never changes the exit status: the status was shown.
    static func show(pictures urls: [String], _ context: CommandContext) {
        guard !urls.isEmpty else { return }
        guard let graphics = graphics(environment: context.environment, stdoutIsTerminal: context.output.stdoutIsTerminal) else {
            context.output.note("douctl: this terminal shows no inline pictures (kitty, iTerm2 and WezTerm do); the status names them: \(urls.joined(separator: " "))")
            return
        }
        let client: APIClient
        do {
            var factory = try context.session.clientFactory()
            factory.allowsAnonymous = true
            client = try factory.make()
        } catch {
            context.output.note("douctl: cannot fetch the pictures: \(error.message)")
            return
        }
        for url in urls {
            let name = DownloadNaming.name(url: url) ?? url
            // Read no more than can be drawn: a server cannot make douctl hold more.
            var picture = CappedBody()
            let status: Int
            do {
                status = try client.stream(APIRequest(path: url), restart: { picture.removeAll(); return true }, head: { _ in },
                                           sink: { picture.take($0, cap: maximumBytes) }).head.status
            } catch .transport(.outputFailed) where picture.wasCut {
                context.output.note("douctl: picture \(url) not shown (larger than \(maximumBytes >> 20) MiB)")
                continue
            } catch {
                context.output.note("douctl: picture \(url) not shown: \(error.message)")
                continue
            }
            guard (200..<300).contains(status), let drawn = sequence(picture.bytes, name: name, graphics: graphics) else {
                context.output.note("douctl: picture \(url) not shown (HTTP \(status), \(picture.bytes.count) bytes)")
                continue
            }
            context.output.draw(drawn)
        }
    }
}
