import Testing
import MeishiKit

/// The configuration file's TOML subset: what it reads, and the line of what it refuses.
@Suite struct ConfigFileTests {
    @Test func readsKeysValuesCommentsAndBlankLines() throws {
        let text = """
            # defaults for meishi
            level = "public"   # a comment after a value
            fields = ["name", 'org', "e\\u006dail"]

            timeout = 1_200\r
            literal = 'C:\\no\\escapes'
            flag = true
            """
        let file = try ConfigFile(parsing: text)
        #expect(file.entries == [
            .init(key: "level", value: .string("public"), line: 2),
            .init(key: "fields", value: .strings(["name", "org", "email"]), line: 3),
            .init(key: "timeout", value: .integer(1200), line: 5),
            .init(key: "literal", value: .string("C:\\no\\escapes"), line: 6),
            .init(key: "flag", value: .boolean(true), line: 7),
        ])
    }

    @Test func aHashInsideAStringIsText() throws {
        let file = try ConfigFile(parsing: #"alias = "Mei #1 \"M\"""#)
        #expect(file.entries.first?.value == .string(#"Mei #1 "M""#))
    }

    @Test(arguments: [
        ("level = public", 1, "is not a value"),
        ("\n\n[exchange]", 3, "tables"),
        ("exchange.level = \"public\"", 1, "dotted keys"),
        ("\"level\" = \"public\"", 1, "quoted keys"),
        ("level \"public\"", 1, "expected '='"),
        ("level =", 1, "missing"),
        ("level = \"public", 1, "not closed"),
        ("level = \"pub\\qlic\"", 1, "unknown escape"),
        ("level = \"public\" extra", 1, "unexpected text"),
        ("fields = [\"name\", 3]", 1, "strings only"),
        ("fields = [\"name\"", 1, "not closed"),
        ("timeout = 012", 1, "is not a value"),
        ("level = \"a\"\nlevel = \"b\"", 2, "already set on line 1"),
        ("alias = \"\\uD800\"", 1, "not a Unicode scalar"),
    ])
    func refusesWithTheLine(text: String, line: Int, reason: String) {
        #expect {
            try ConfigFile(parsing: text)
        } throws: { error in
            guard let e = error as? ConfigFile.SyntaxError else { return false }
            return e.line == line && e.reason.contains(reason)
        }
    }
}
