package redistest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseClusterNodes(t *testing.T) {
	reply := "" +
		"aaa 127.0.0.1:11001@21001 myself,master - 0 0 1 connected 0-5460 [5461->-bbb]\n" +
		"bbb 127.0.0.1:11002@21002,host.example master - 0 1 2 connected 5461-10922 12000 [100-<-aaa]\n" +
		"ccc 127.0.0.1:11003@21003 slave,fail? aaa 0 1 1 disconnected\n" +
		"ddd :0@0 master,noaddr - 0 1 0 disconnected\n"
	entries, err := parseClusterNodes(reply)
	require.NoError(t, err)
	require.Len(t, entries, 4)

	a, b, c, d := entries[0], entries[1], entries[2], entries[3]
	require.True(t, a.myself() && a.master() && a.migrating && !a.importing)
	require.True(t, a.owns(0) && a.owns(5460) && !a.owns(5461), "a migrating slot stays with its owner")

	require.True(t, b.importing && b.owns(12000) && !b.owns(11999) && !b.owns(100))

	require.True(t, c.replica() && c.failing() && !c.connected)
	require.Equal(t, "aaa", c.masterID)
	require.Equal(t, "ccc replica-of aaa", c.role())

	require.True(t, d.failing())

	_, err = parseClusterNodes("aaa 127.0.0.1:1@2 master - 0 0 1 connected x-y\n")
	require.ErrorContains(t, err, "bad slot")
	_, err = parseClusterNodes("too few fields\n")
	require.ErrorContains(t, err, "fields")
}
