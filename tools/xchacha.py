"""XChaCha20-Poly1305 (IETF) opening for the independent checkers, from Python `cryptography`'s
ChaCha20-Poly1305 and HChaCha20 in plain Python (draft-irtf-cfrg-xchacha section 2.2): the
construction libsodium uses, written again from the document, not from meishi's code."""
import struct

from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305


def hchacha20(key, nonce16):
    """RFC draft-irtf-cfrg-xchacha section 2.2: the first and last rows of ChaCha20's state after
    its 20 rounds, without the final addition."""
    def rotl(v, n):
        return ((v << n) & 0xFFFFFFFF) | (v >> (32 - n))

    def quarter(s, a, b, c, d):
        s[a] = (s[a] + s[b]) & 0xFFFFFFFF; s[d] = rotl(s[d] ^ s[a], 16)
        s[c] = (s[c] + s[d]) & 0xFFFFFFFF; s[b] = rotl(s[b] ^ s[c], 12)
        s[a] = (s[a] + s[b]) & 0xFFFFFFFF; s[d] = rotl(s[d] ^ s[a], 8)
        s[c] = (s[c] + s[d]) & 0xFFFFFFFF; s[b] = rotl(s[b] ^ s[c], 7)

    s = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574] + list(struct.unpack("<8I", key)) + list(struct.unpack("<4I", nonce16))
    for _ in range(10):
        quarter(s, 0, 4, 8, 12); quarter(s, 1, 5, 9, 13); quarter(s, 2, 6, 10, 14); quarter(s, 3, 7, 11, 15)
        quarter(s, 0, 5, 10, 15); quarter(s, 1, 6, 11, 12); quarter(s, 2, 7, 8, 13); quarter(s, 3, 4, 9, 14)
    return struct.pack("<8I", *(s[0:4] + s[12:16]))


def xchacha20poly1305_open(key, nonce24, ciphertext, aad):
    subkey = hchacha20(key, nonce24[:16])
    return ChaCha20Poly1305(subkey).decrypt(b"\0\0\0\0" + nonce24[16:], ciphertext, aad)
