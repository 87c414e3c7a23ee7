import MeishiCard
import MeishiStore

extension MeishiFailure {
    /// A card edit that was refused.
    public init(_ e: CardError) {
        switch e {
        case .invalidFieldName(let n):
            self.init("unknown field \"\(TerminalText.sanitized(n))\"",
                      hint: "fields are \(FieldName.standard.joined(separator: ", ")) or x-<word>", status: .usage)
        case .notMultiValued(let f):
            self.init("\(f) holds one value", hint: "use 'meishi card set \(f) VALUE' to replace it", status: .usage)
        case .empty(let f): self.init("\(f) cannot be empty", hint: "to remove it: meishi card unset \(f)", status: .dataError)
        case .tooLong(let f, let bytes):
            self.init("\(f) is \(bytes) bytes, more than the \(Card.maximumValueBytes)-byte limit", status: .dataError)
        case .controlCharacter(let f):
            self.init("\(f) contains a control or bidi-override character", status: .dataError)
        case .tooManyValues(let limit): self.init("a card holds at most \(limit) values", status: .dataError)
        case .invalidEmail(let v):
            self.init("\"\(TerminalText.sanitized(v))\" is not an email address", hint: "expected name@example.org", status: .dataError)
        case .invalidPhone(let v):
            self.init("\"\(TerminalText.sanitized(v))\" is not a phone number",
                      hint: "digits, spaces, ( ) - . / and an optional leading +, e.g. +81 90 1234 5678", status: .dataError)
        case .invalidURL(let v):
            self.init("\"\(TerminalText.sanitized(v))\" is not a URL", hint: "include the scheme, e.g. https://\(TerminalText.sanitized(v))",
                      status: .dataError)
        case .duplicateValue(let f): self.init("your card already has that \(f)", status: .dataError)
        case .noSuchField(let f): self.init("your card has no \(f)", status: .failure)
        case .noSuchValue(let f): self.init("your card has no \(f) with that value", hint: "see 'meishi card show'", status: .failure)
        }
    }

    /// A payload that did not verify.
    public init(_ e: PayloadError) {
        self.init(e.reason, status: .dataError)
    }

    /// A store failure.
    public init(_ e: StoreError) {
        switch e {
        case .notFound(let ref):
            self.init("no contact matches \"\(TerminalText.sanitized(ref))\"", hint: "see 'meishi contacts list'", status: .noInput)
        case .ambiguous(let ref, let candidates):
            self.init("\"\(TerminalText.sanitized(ref))\" matches several contacts: "
                      + candidates.map(TerminalText.sanitized).joined(separator: "; "),
                      hint: "use the id or the DID", status: .usage)
        case .unavailable(let why):
            self.init("the contact store is unavailable: \(why)", status: .failure)
        }
    }
}
