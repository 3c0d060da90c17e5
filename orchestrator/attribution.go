package orchestrator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/unified-exec/unified-exec/policy"
	"github.com/unified-exec/unified-exec/sandbox"
	"github.com/unified-exec/unified-exec/unifiedexec"
)

// evidence is what the pipeline judges a run by (see sandbox.Attribute):
// its exit and output, the plan it ran under, and the socket calls its
// sandbox refused; cwd resolves relative paths.
func (o *Orchestrator) evidence(a *attempt, cwd string) sandbox.Evidence {
	ev := sandbox.Evidence{Code: a.Code, Output: a.Output, Plan: a.plan, Net: a.net, Cwd: cwd, Home: o.home, Mounts: o.m.Isolated()}
	if !a.Sandboxed {
		ev.Plan = nil
	}
	return ev
}

// sandboxKey names what a plan allows, for the shell snapshot: commands
// under one mode and network share the login shell's snapshot.
func sandboxKey(p sandbox.Plan) string {
	if p.Network {
		return p.Mode + ", network on"
	}
	return p.Mode + ", network off"
}

// watch makes sb (a plan with the network off) report the socket calls
// its sandbox refuses to a NetWatch, which it returns: on the thread
// path through the thread's listener, on the helper path through a
// socket the helper inherits (plan.NotifyFD). sb.Plain keeps the
// sandbox as it was, for the login shell's snapshot, whose refusals are
// not the command's. The NetWatch is nil (its methods do nothing) where
// refusals cannot be counted here, or nothing is refused.
func (o *Orchestrator) watch(sb *unifiedexec.Sandbox, plan *sandbox.Plan) *netWatch {
	if sb == nil || plan == nil || plan.Network || plan.Egress || !o.status.NetWatch {
		return nil
	}
	w, err := sandbox.NewNetWatch()
	if err != nil {
		return nil
	}
	p := *plan
	p.NotifyFD = unifiedexec.HelperFileFD(0)
	payload, err := p.Marshal()
	if err != nil {
		w.Close()
		return nil
	}
	plain := *sb
	sb.Plain = &plain
	sb.Payload = payload
	sb.Files = []*os.File{w.HelperFile()}
	if sb.Thread != nil {
		sb.Thread = w.Thread
	}
	return &netWatch{w}
}

// netWatch is a *sandbox.NetWatch whose nil value does nothing.
type netWatch struct{ w *sandbox.NetWatch }

func (n *netWatch) Started() {
	if n != nil {
		n.w.Started()
	}
}

func (n *netWatch) Refused() sandbox.NetRefusals {
	if n == nil {
		return sandbox.NetRefusals{}
	}
	return n.w.Refused()
}

func (n *netWatch) Close() {
	if n != nil {
		n.w.Close()
	}
}

// unreadable reports whether dir lies in (or is) a deny_read path.
func unreadable(dir string, denyRead []string, home string) bool {
	for _, d := range denyRead {
		if (d == "~" || strings.HasPrefix(d, "~/")) && home != "" {
			d = filepath.Join(home, d[1:])
		}
		if rel, err := filepath.Rel(d, dir); err == nil && filepath.IsAbs(d) && (rel == "." || !strings.HasPrefix(rel, "..")) {
			return true
		}
	}
	return false
}

// snapshotDir picks where the manager keeps the login shells' snapshots:
// a folder commands can read and not write. The user's cache folder
// (unified-exec/ in it) or, when that lies in a folder the policy lets
// commands write (or read nothing of: deny_read), a folder of this
// user's own in /var/tmp; failing both,
// the cache folder, which the plan then keeps read-only
// (Plan.ReadOnlyFiles).
func (o *Orchestrator) snapshotDir(sp policy.Sandbox) string {
	first := unifiedexec.DefaultSnapshotDir()
	candidates := []string{first, filepath.Join("/var/tmp", fmt.Sprintf("unified-exec-%d", os.Getuid()))}
	for _, c := range candidates {
		if unreadable(c, sp.DenyRead, o.home) {
			continue // commands could not read it
		}
		if err := os.MkdirAll(c, 0o700); err != nil || !ownedPrivate(c) {
			continue
		}
		if o.inWritableRoot(c, sp) == "" {
			return c
		}
	}
	os.MkdirAll(first, 0o700)
	return first
}

// Snapshot takes (or finds) the snapshot of the default shell's login
// environment under the policy's sandbox, as the first login command
// would, for `sandbox status`: what the profile printed, and whether
// login commands restore it or fall back to -lc.
func (o *Orchestrator) Snapshot(ctx context.Context) (unifiedexec.SnapshotInfo, error) {
	sb, _, _, _, err := o.sandboxFor(o.pol.Sandbox, o.pol.Sandbox.Mode)
	if err != nil {
		return unifiedexec.SnapshotInfo{}, err
	}
	return o.m.Snapshot(ctx, "", sb)
}
