package redistest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
)

// migrateBatch is how many keys one MIGRATE moves.
const migrateBatch = 100

// SlotMigration is a hash slot caught in the middle of moving between two
// masters, the state in which clients get ASK redirects: the source still
// owns the slot, but keys already moved, and keys that do not exist, live on
// the target. Create one with BeginSlotMigration and end it with Finish.
type SlotMigration struct {
	c        *Cluster
	slot     int
	from, to *Server
}

// MigrateSlot moves slot, with all its keys, to the master to, the way
// redis-cli --cluster reshard does: CLUSTER SETSLOT IMPORTING on to and
// MIGRATING on the current owner, MIGRATE of every key, then CLUSTER SETSLOT
// NODE on both and the other masters. It returns once every running node
// agrees that to owns the slot. Clients holding the old slot map get MOVED
// on their next command for it.
func (c *Cluster) MigrateSlot(t testing.TB, slot int, to *Server) {
	t.Helper()
	m := c.BeginSlotMigration(t, slot, to)
	m.MigrateAllKeys(t)
	m.Finish(t)
}

// BeginSlotMigration marks slot as importing on to and migrating on its
// current owner, moving no key yet. It fails t if to is not a running master
// of this cluster or already owns the slot.
func (c *Cluster) BeginSlotMigration(t testing.TB, slot int, to *Server) *SlotMigration {
	t.Helper()
	checkSlot(t, "BeginSlotMigration", slot)
	c.mustContain(t, "BeginSlotMigration", to)
	self, err := c.self(to)
	if err != nil {
		t.Fatalf("redistest: BeginSlotMigration: target: %v", err)
	}
	if !self.master() {
		t.Fatalf("redistest: BeginSlotMigration: target %s is a replica, not a master\n%s", to, c.describe())
	}
	from := c.MasterForSlot(t, slot)
	if from == to {
		t.Fatalf("redistest: BeginSlotMigration: slot %d is already served by %s", slot, to)
	}
	m := &SlotMigration{c: c, slot: slot, from: from, to: to}
	m.do(t, to, "CLUSTER", "SETSLOT", slot, "IMPORTING", from.ID())
	m.do(t, from, "CLUSTER", "SETSLOT", slot, "MIGRATING", to.ID())
	return m
}

// Slot returns the slot being migrated.
func (m *SlotMigration) Slot() int { return m.slot }

// From returns the master the slot is moving away from.
func (m *SlotMigration) From() *Server { return m.from }

// To returns the master the slot is moving to.
func (m *SlotMigration) To() *Server { return m.to }

// MigrateKeys moves the given keys, which must hash to the migrating slot,
// from the source to the target with MIGRATE. Keys that do not exist are
// ignored, as MIGRATE does.
func (m *SlotMigration) MigrateKeys(t testing.TB, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if got := m.c.KeySlot(t, k); got != m.slot {
			t.Fatalf("redistest: MigrateKeys: key %q is in slot %d, not the migrating slot %d", k, got, m.slot)
		}
	}
	for len(keys) > 0 {
		n := min(len(keys), migrateBatch)
		m.migrate(t, keys[:n])
		keys = keys[n:]
	}
}

// MigrateAllKeys moves every key still in the slot on the source.
func (m *SlotMigration) MigrateAllKeys(t testing.TB) {
	t.Helper()
	for {
		admin := m.from.adminClient()
		if admin == nil {
			t.Fatalf("redistest: MigrateAllKeys: source %s is not running", m.from)
		}
		keys, err := admin.ClusterGetKeysInSlot(context.Background(), m.slot, migrateBatch).Result()
		if err != nil {
			t.Fatalf("redistest: MigrateAllKeys: CLUSTER GETKEYSINSLOT %d on %s: %v", m.slot, m.from, err)
		}
		if len(keys) == 0 {
			return
		}
		m.migrate(t, keys)
	}
}

// migrate runs one MIGRATE of keys from the source to the target.
func (m *SlotMigration) migrate(t testing.TB, keys []string) {
	t.Helper()
	args := []any{"MIGRATE", "127.0.0.1", strconv.Itoa(m.to.Port()), "", 0, commandTimeout.Milliseconds(), "KEYS"}
	for _, k := range keys {
		args = append(args, k)
	}
	m.do(t, m.from, args...)
}

// Finish assigns the slot to the target (CLUSTER SETSLOT NODE on the target,
// the source, then every other running master, the order Redis documents)
// and returns once every running node agrees and the cluster is healthy.
// Keys not migrated by then stay behind on the source, unreachable, exactly
// as they would in a real botched resharding.
func (m *SlotMigration) Finish(t testing.TB) {
	t.Helper()
	m.do(t, m.to, "CLUSTER", "SETSLOT", m.slot, "NODE", m.to.ID())
	m.do(t, m.from, "CLUSTER", "SETSLOT", m.slot, "NODE", m.to.ID())
	for _, n := range m.c.Masters() {
		if n != m.to && n != m.from {
			m.do(t, n, "CLUSTER", "SETSLOT", m.slot, "NODE", m.to.ID())
		}
	}
	err := poll(clusterTimeout, func() error {
		for _, n := range m.c.nodes {
			if !n.Running() {
				continue
			}
			entries, err := m.c.view(n)
			if err != nil {
				return err
			}
			for _, e := range entries {
				if e.owns(m.slot) && e.id != m.to.ID() {
					return fmt.Errorf("%s still sees slot %d served by node %.8s", n, m.slot, e.id)
				}
			}
		}
		return m.c.checkHealthy()
	})
	if err != nil {
		t.Fatalf("redistest: MigrateSlot: slot %d to %s did not settle within %v: %v\n%s",
			m.slot, m.to, clusterTimeout, err, m.c.describe())
	}
}

// do runs one command on node n, failing t on any error.
func (m *SlotMigration) do(t testing.TB, n *Server, args ...any) {
	t.Helper()
	admin := n.adminClient()
	if admin == nil {
		t.Fatalf("redistest: migrating slot %d: %s is not running", m.slot, n)
	}
	if err := admin.Do(context.Background(), args...).Err(); err != nil {
		t.Fatalf("redistest: migrating slot %d: %v on %s: %v\n%s", m.slot, args, n, err, n.Log(logLinesInErrors))
	}
}
