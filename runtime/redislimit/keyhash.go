package redislimit

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
)

// minSecretLen is the shortest secret WithHashedKeys accepts: RFC 2104
// advises against HMAC keys shorter than the hash's output.
const minSecretLen = sha256.Size

// hashedKeyLen is the length of a key's stored form under WithHashedKeys:
// 128 bits of HMAC-SHA256 in unpadded base64url.
const hashedKeyLen = 22

// A keyHasher computes HMAC-SHA256 with one secret, whose padded forms it
// holds so that each key costs two SHA-256 sums and no allocation.
type keyHasher struct {
	ipad, opad [sha256.BlockSize]byte
}

// newKeyHasher returns the hasher of secret, or an error, which never holds
// the secret, if it is shorter than minSecretLen.
func newKeyHasher(secret []byte) (*keyHasher, error) {
	if len(secret) < minSecretLen {
		return nil, fmt.Errorf("redislimit: WithHashedKeys needs a secret of at least %d bytes, got %d", minSecretLen, len(secret))
	}
	h := &keyHasher{}
	if len(secret) > sha256.BlockSize {
		sum := sha256.Sum256(secret)
		secret = sum[:]
	}
	copy(h.ipad[:], secret)
	copy(h.opad[:], secret)
	for i := range h.ipad {
		h.ipad[i] ^= 0x36
		h.opad[i] ^= 0x5c
	}
	return h, nil
}

// appendHashed appends the stored form of key: the first 16 bytes of
// HMAC-SHA256(secret, key) in unpadded base64url, hashedKeyLen bytes.
func (h *keyHasher) appendHashed(b []byte, key string) []byte {
	// Keys up to 192 bytes, nearly all, are hashed from the stack.
	var stack [sha256.BlockSize + 192]byte
	in := stack[:0]
	if len(key) > len(stack)-sha256.BlockSize {
		in = make([]byte, 0, sha256.BlockSize+len(key))
	}
	in = append(in, h.ipad[:]...)
	in = append(in, key...)
	inner := sha256.Sum256(in)
	var out [sha256.BlockSize + sha256.Size]byte
	copy(out[:], h.opad[:])
	copy(out[sha256.BlockSize:], inner[:])
	sum := sha256.Sum256(out[:])
	return base64.RawURLEncoding.AppendEncode(b, sum[:16])
}
