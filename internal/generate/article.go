package generate

// withArticle returns word preceded by "a", or by "an" when it starts with
// a vowel letter, for the doc comments that call a wrapper "an Accounts".
// It goes by the first letter alone, as "an Uploader" wants: the sound
// ("a User") cannot be told from a name's spelling reliably.
func withArticle(word string) string {
	if word != "" {
		switch word[0] {
		case 'A', 'E', 'I', 'O', 'U', 'a', 'e', 'i', 'o', 'u':
			return "an " + word
		}
	}
	return "a " + word
}
