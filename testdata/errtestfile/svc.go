// Package errtestfile has a directive in a test file, which is an error.
package errtestfile
