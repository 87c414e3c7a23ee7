import MeishiCard
import MeishiCrypto
import MeishiProximity
import MeishiQR

enum PayloadFuzz {
    static let verifier = CardVerifier(maximumSkew: CardVerifier.defaultMaximumSkew, clock: { FuzzTarget.now })

    /// Any bytes: a verdict, never a crash. A card that verifies must verify again from its
    /// canonical JSON and from its QR text form, with the same content.
    static func run(_ data: [UInt8]) {
        guard let card = try? verifier.verify(data) else { return }
        checkForms(of: card.payload)
    }

    /// QR text: decoding never crashes; a decoded card re-encodes to text that decodes to it.
    static func runQRText(_ data: [UInt8]) {
        let text = String(decoding: data, as: UTF8.self)
        guard let payload = try? CardQRText.decode(text) else { return }
        let again = try? CardQRText.decode(CardQRText.encode(payload))
        require(again == payload, "QR text does not survive re-encoding")
        if (try? verifier.verify(Array(text.utf8))) != nil { checkForms(of: payload) }
    }

    static func checkForms(of payload: ProximityPayload) {
        let fromJSON = try? verifier.verify(payload.canonicalJSON)
        require(fromJSON?.payload == payload, "a valid card fails from its canonical JSON")
        let fromQR = try? verifier.verify(Array(CardQRText.encode(payload).utf8))
        require(fromQR?.payload == payload, "a valid card fails from its QR text form")
    }
}

enum FrameFuzz {
    /// The first byte picks how the stream is cut; the decoder must return the same frames (or
    /// the same error) whatever the cuts, and never a frame outside 1…65536 bytes.
    static func run(_ data: [UInt8]) {
        var input = FuzzInput(data)
        let step = Int(input.byte() % 17) + 1
        let stream = input.rest()
        let whole = decode(stream, pieces: stream.isEmpty ? [] : [stream[...]])
        var pieces: [ArraySlice<UInt8>] = []
        var i = 0
        while i < stream.count {
            pieces.append(stream[i..<min(stream.count, i + step)])
            i += step
        }
        let cut = decode(stream, pieces: pieces)
        // A stream that breaks fails however it is cut; frames completed in the same piece as the
        // break are dropped with it (the connection ends there), so only whole streams compare.
        require(whole.failed == cut.failed, "a broken stream is refused only when cut some ways")
        if !whole.failed { require(whole.frames == cut.frames, "frames depend on how the stream is cut") }
        require(cut.frames.count >= whole.frames.count, "cutting the stream lost frames before the break")
        for f in whole.frames { require(!f.isEmpty && f.count <= FrameCodec.maximumBody, "frame size out of bounds") }
        for f in whole.frames { require(FrameCodec.encode(f).count == f.count + 4, "frame re-encoding") }
    }

    static func decode(_ stream: [UInt8], pieces: [ArraySlice<UInt8>]) -> (frames: [[UInt8]], failed: Bool) {
        var decoder = FrameDecoder()
        var frames: [[UInt8]] = []
        for p in pieces {
            do { frames += try decoder.feed(p) } catch { return (frames, true) }
        }
        return (frames, false)
    }
}

enum AnnouncementFuzz {
    /// A datagram either parses to an announcement whose encoding is exactly the datagram, or is dropped.
    static func run(_ data: [UInt8]) {
        guard let a = Announcement(data) else { return }
        require(a.encoded == data, "an announcement has two encodings")
        require(a.sessionID.count == 16 && a.port != 0, "announcement fields out of bounds")
        require((a.alias?.utf8.count ?? 0) <= Announcement.maximumAliasBytes, "alias too long")
    }
}

enum VCardFuzz {
    /// Any bytes: cards and located problems, within the parser's limits.
    static func run(_ data: [UInt8]) {
        let parsed = VCardParser.parse(data)
        for card in parsed.cards {
            require(card.properties.count <= VCardParser.maximumProperties, "too many properties kept")
        }
        let read = VCard.read(data)
        for (_, contact) in read.contacts {
            for (_, values) in contact.fields {
                require(values.count <= ImportedContact.maximumValuesPerField, "too many values in one field")
            }
        }
    }
}

enum ImageFuzz {
    /// Any bytes: a picture or an error, never a crash or an exit; small pictures are scanned.
    static func run(_ data: [UInt8]) {
        guard let image = try? ImageDecoder.decode(data, maximumPixels: 1 << 22) else { return }
        require(image.pixels.count == image.width * image.height, "pixel buffer does not match the size")
        if image.width * image.height <= 96 * 96 { _ = QRScanner.scan(image) }
    }
}

enum SolidarityFuzz {
    /// Any text: a verdict, never a crash.
    static func run(_ data: [UInt8]) {
        let text = String(decoding: data, as: UTF8.self)
        _ = try? SolidarityCard.parse(text)
        _ = try? PayloadFuzz.verifier.verify(solidarity: text)
    }
}
