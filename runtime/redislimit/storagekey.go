package redislimit

// Storage keys, the one place they are built, clear or hashed (see
// WithHashedKeys): every Redis key of a limit's state begins with the
// limiter's prefix and the hash tag that picks its cluster slot.

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/ratelimitgen/ratelimitgen/runtime"
)

// maxLiteralLen is the longest name or key stored verbatim; longer ones are
// replaced by their SHA-256 so that a stored key stays below 512 bytes
// whatever the input.
const maxLiteralLen = 180

// appendStorageKey appends the storage key of (algo, name, key) under prefix:
//
//	prefix "{" tag "}" algo enc(name) enc(key)
//
// where tag is a hash of key in hex, and enc(s) is "=" len ":" s for short
// strings and "#" sha256hex(s) for long ones. The prefix and tag hold no
// braces, so Redis Cluster hashes only the tag: user bytes cannot pick a
// slot, and every limit on the same key lands on the same slot. enc is
// prefix-free, so distinct (algo, name, key) never share a storage key.
func appendStorageKey(b []byte, prefix, algo, name, key string) []byte {
	b = append(b, prefix...)
	b = append(b, '{')
	b = appendTag(b, key)
	b = append(b, '}')
	b = append(b, algo...)
	b = appendEncoded(b, name)
	return appendEncoded(b, key)
}

// appendHashedStorageKey appends the storage key of (algo, name, key)
// under prefix when h stores keys hashed (see WithHashedKeys):
//
//	prefix "{" tag "}" algo enc(name) "~" hk
//
// where hk is h's hash of key and tag the hash tag of hk, so that every
// limit on the same key still lands on the same slot. hk has a fixed
// length, and "~" keeps these keys apart from the clear ones, so distinct
// (algo, name, hk) never share a storage key either.
func appendHashedStorageKey(b []byte, h *keyHasher, prefix, algo, name, key string) []byte {
	var hk [hashedKeyLen]byte
	h.appendHashed(hk[:0], key)
	b = append(b, prefix...)
	b = append(b, '{')
	b = appendTag(b, string(hk[:]))
	b = append(b, '}')
	b = append(b, algo...)
	b = appendEncoded(b, name)
	b = append(b, '~')
	return append(b, hk[:]...)
}

func appendEncoded(b []byte, s string) []byte {
	if len(s) > maxLiteralLen {
		sum := sha256.Sum256([]byte(s))
		b = append(b, '#')
		return hex.AppendEncode(b, sum[:])
	}
	b = append(b, '=')
	if n := len(s); n < 100 {
		// Most names and keys: two digits at most, without strconv.
		if n >= 10 {
			b = append(b, byte('0'+n/10))
		}
		b = append(b, byte('0'+n%10))
	} else {
		b = strconv.AppendInt(b, int64(n), 10)
	}
	b = append(b, ':')
	return append(b, s...)
}

// tagLen is the length of a hash tag: 8 hex digits.
const tagLen = 8

// appendTag appends the 32-bit FNV-1a hash of key in hex. It only spreads
// keys over cluster slots; collisions are harmless because the full key
// follows the tag.
func appendTag(b []byte, key string) []byte {
	const (
		offset32 = 2166136261
		prime32  = 16777619
	)
	h := uint32(offset32)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= prime32
	}
	const digits = "0123456789abcdef"
	var hex [tagLen]byte
	for i := range hex {
		hex[i] = digits[(h>>(28-4*i))&0xf]
	}
	return append(b, hex[:]...)
}

// sanitizePrefix makes a user-supplied prefix safe to put before the hash
// tag: braces would let the prefix choose the cluster slot, so they and the
// escape byte itself are percent-encoded.
func sanitizePrefix(p string) string {
	out := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '{', '}', '%':
			out = append(out, '%', "0123456789ABCDEF"[c>>4], "0123456789ABCDEF"[c&0xf])
		default:
			out = append(out, c)
		}
	}
	if len(out) > 64 {
		sum := sha256.Sum256(out)
		out = hex.AppendEncode(out[:0:0], sum[:8])
	}
	return string(out)
}

// placeKeys sets the storage key of each ask of reqs not in
// runtime.ModeOff. It comes after the deny cache, whose answers cost no
// allocation.
func (r *Limiter) placeKeys(asks []ask, reqs []runtime.Request) {
	for i, q := range reqs {
		if q.Limit.Mode != runtime.ModeOff {
			asks[i].key = r.keyOf(specsByCode[asks[i].algo()].tag, q.Limit.Name, q.Key)
		}
	}
}

// storageKey returns the key of l's state for key in Redis.
func (r *Limiter) storageKey(l runtime.Limit, key string) string {
	return r.keyOf(specOf(l).tag, l.Name, key)
}

// keyOf returns the storage key of the limit name of the algorithm of tag,
// for key.
func (r *Limiter) keyOf(tag, name, key string) string {
	// Build in a stack buffer when the key is short, so the string is the
	// only allocation.
	var stack [256]byte
	if h := r.cfg.keyHash; h != nil {
		return string(appendHashedStorageKey(stack[:0], h, r.cfg.prefix, tag, name, key))
	}
	return string(appendStorageKey(stack[:0], r.cfg.prefix, tag, name, key))
}

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
