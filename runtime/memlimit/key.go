package memlimit

import (
	"crypto/sha256"
	"hash/maphash"
	"math/bits"
	"unsafe"
)

// maxLiteralLen is the longest name or key the limiter holds verbatim;
// longer ones are held as their SHA-256, as Redis stores them, so that what
// a key costs does not depend on its length.
const maxLiteralLen = 180

// storeKey mirrors the Redis storage key: algorithm, limit name, key. A name
// or key longer than maxLiteralLen is held as its SHA-256, as appendEncoded
// does for Redis, so that a caller-chosen key (from a header, say) cannot
// make the limiter hold megabytes per key. The hashed flags keep a digest
// apart from a literal name or key made of the same 32 bytes. There is one
// flag per part: with a single one, (long name N, key D) and (name
// sha256(N), long key K) would share an entry whenever D is sha256(K).
//
// name and key are the stored forms: the caller's strings, or views of
// digests kept in the caller's frame (see keyDigests), so that even a long
// key costs no allocation until the limiter first stores it.
type storeKey struct {
	name, key             string
	algo                  algoIndex
	nameHashed, keyHashed bool
}

// keyDigests holds the digests of a storeKey's long parts.
type keyDigests struct {
	name, key [sha256.Size]byte
}

// newStoreKey returns the key of (algo, name, key), hashing the long parts
// into d, which must live as long as the key. (It returns the key rather
// than filling one in place so that escape analysis can see that d lives
// only as long as the key does, and keep both on the caller's stack.)
func newStoreKey(algo algoIndex, name, key string, d *keyDigests) storeKey {
	k := storeKey{algo: algo, name: name, key: key}
	if len(name) > maxLiteralLen {
		d.name = sum256(name)
		k.name, k.nameHashed = unsafe.String(&d.name[0], len(d.name)), true
	}
	if len(key) > maxLiteralLen {
		d.key = sum256(key)
		k.key, k.keyHashed = unsafe.String(&d.key[0], len(d.key)), true
	}
	return k
}

// sum256 returns s's SHA-256. It hashes the string's own bytes: Sum256 only
// reads them, and []byte(s) would copy the whole key on every call, as much
// work as the hash.
func sum256(s string) [sha256.Size]byte {
	return sha256.Sum256(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// digest returns s's SHA-256 as a 32-byte string.
func digest(s string) string {
	sum := sum256(s)
	return string(sum[:])
}

// hash returns k's 64-bit hash; its top shardBits bits pick the shard.
//
// Only the key is hashed in full, with the limiter's random seed: it is
// what callers (and their users) choose, and a second full hash of the
// name would cost as much again on every call. The name, which the
// program chooses, is folded in through nameFold; two names that fold
// alike only make their keys share a chain, as matches tells them apart.
func (m *Limiter) hash(k *storeKey) uint64 {
	return maphash.String(m.keySeed, k.key) ^ nameFold(k.name, k.algo)
}

// nameFold mixes a name's length, its first and last 8 bytes, and the
// algorithm into 64 bits. Names of up to 16 bytes count whole; longer ones
// that differ only in the middle fold alike.
func nameFold(name string, algo algoIndex) uint64 {
	n := len(name)
	x := uint64(n)<<56 ^ uint64(algo)<<48
	if n >= 8 {
		x ^= le64(name) ^ bits.RotateLeft64(le64(name[n-8:]), 31)
	} else {
		for i := 0; i < n; i++ {
			x ^= uint64(name[i]) << (8 * i)
		}
	}
	x *= 0x9e3779b97f4a7c15
	return x ^ x>>29
}

// le64 reads s's first 8 bytes as a little-endian number.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// shardOf returns the index of the shard of hash h.
func shardOf(h uint64) uint64 { return h >> (64 - shardBits) }
