package redistest

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// manualFailoverRetry is when Failover repeats CLUSTER FAILOVER if the replica
// is still not promoted. Redis abandons a manual failover that has not
// completed within 5 seconds (CLUSTER_MF_TIMEOUT), e.g. when an election
// round lost votes to timing; a new request starts a fresh attempt.
const manualFailoverRetry = 6 * time.Second

// Failover promotes a replica of master by running CLUSTER FAILOVER on that
// replica, and returns the promoted node once it reports itself as master,
// the old master (if running) reports itself as its replica, and the cluster
// is healthy again. With master running this is the coordinated manual
// failover, in which no acknowledged write is lost; with master stopped it
// uses CLUSTER FAILOVER FORCE, which needs only the other masters' votes.
func (c *Cluster) Failover(t testing.TB, master *Server) *Server {
	t.Helper()
	c.mustContain(t, "Failover", master)
	if master.Running() {
		self, err := c.self(master)
		if err != nil {
			t.Fatalf("redistest: Failover: %v", err)
		}
		if !self.master() {
			t.Fatalf("redistest: Failover: %s is a replica, not a master\n%s", master, c.describe())
		}
	}
	replica := c.ReplicaOf(t, master)
	admin := replica.adminClient()
	args := []any{"CLUSTER", "FAILOVER"}
	if master.Running() {
		// The coordinated failover needs the replica in sync with its master.
		err := poll(clusterTimeout, func() error {
			repl, err := admin.Info(context.Background(), "replication").Result()
			if err != nil {
				return err
			}
			if link, _ := infoField(repl, "master_link_status"); link != "up" {
				return fmt.Errorf("master_link_status:%s", link)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("redistest: Failover: replica %s not linked to %s: %v\n%s", replica, master, err, c.describe())
		}
	} else {
		args = append(args, "FORCE")
	}

	if err := admin.Do(context.Background(), args...).Err(); err != nil {
		t.Fatalf("redistest: Failover: %v on %s: %v\n%s", args, replica, err, c.describe())
	}
	issued := time.Now()
	err := poll(clusterTimeout, func() error {
		self, err := c.self(replica)
		if err != nil {
			return err
		}
		if !self.master() {
			if time.Since(issued) > manualFailoverRetry {
				// Errors are not fatal here: the replica may have been
				// promoted since we looked, and then it refuses.
				_ = admin.Do(context.Background(), args...).Err()
				issued = time.Now()
			}
			return fmt.Errorf("%s is still a replica", replica)
		}
		if master.Running() {
			old, err := c.self(master)
			if err != nil {
				return err
			}
			if !old.replica() || old.masterID != replica.ID() {
				return fmt.Errorf("old master %s does not yet report itself as replica of %s", master, replica)
			}
		}
		return c.checkHealthy()
	})
	if err != nil {
		t.Fatalf("redistest: Failover: promoting %s in place of %s did not settle within %v: %v\n%s",
			replica, master, clusterTimeout, err, c.describe())
	}
	return replica
}
