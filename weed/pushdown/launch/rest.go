package launch

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/command"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/util"

	"github.com/lakeweed/seaweedfs/weed/pushdown/netport"
	"github.com/lakeweed/seaweedfs/weed/pushdown/restplan"
)

// Server-side scan planning on the Iceberg REST port (weed/pushdown/restplan).
// Upstream's catalog offers no hook for new routes, so before upstream's Run
// the launcher takes the port the user gave upstream's catalog, moves
// upstream's catalog to a free port on the same host, and serves the
// planning routes there itself, proxying every other request:
//
//	-s3.port.iceberg=8181 ──▶ restplan.Front on :8181 ──proxy──▶ upstream catalog on :<free>
//
// Without -pushdown (or with -pushdown.rest=false) nothing moves.

// restFlags are the -pushdown.rest.* flags of a catalog command.
type restFlags struct {
	enabled      *bool
	syncWait     *time.Duration
	tasksPerPage *int
	planTTL      *time.Duration
	maxPlans     *int
	authTTL      *time.Duration
}

func addRESTFlags(cmd *command.Command) *restFlags {
	d := restplan.DefaultConfig()
	return &restFlags{
		enabled:      cmd.Flag.Bool("pushdown.rest", true, "serve the Iceberg REST scan-planning endpoints (plan, fetch result, cancel, fetch tasks) from the pushdown planner on the Iceberg REST catalog's port"),
		syncWait:     cmd.Flag.Duration("pushdown.rest.syncWait", d.SyncWait, "how long a scan plan request waits for its plan before it is answered \"submitted\" and polled (0: always submitted)"),
		tasksPerPage: cmd.Flag.Int("pushdown.rest.tasksPerPage", d.TasksPerPage, "file scan tasks per answer: a plan with more is split into plan tasks fetched page by page"),
		planTTL:      cmd.Flag.Duration("pushdown.rest.planTTL", d.PlanTTL, "how long a scan plan is kept after its last use (then its plan id and plan tasks are unknown: NoSuchPlanIdException / NoSuchPlanTaskException)"),
		maxPlans:     cmd.Flag.Int("pushdown.rest.maxPlans", d.MaxPlans, "scan plans kept at once (running, or holding plan tasks), one caller holding at most an eighth of them; past either, new plans are answered 503"),
		authTTL: cmd.Flag.Duration("pushdown.rest.authTTL", d.AuthTTL, "how long a scan-planning caller's authorization (upstream's LoadTable answering 200 to its credential for the table) is remembered; "+
			"a revoked caller loses access within it (0: every planning request asks LoadTable)"),
	}
}

func (r *restFlags) config() restplan.Config {
	c := restplan.DefaultConfig()
	c.SyncWait, c.TasksPerPage, c.PlanTTL, c.MaxPlans, c.AuthTTL = *r.syncWait, *r.tasksPerPage, *r.planTTL, *r.maxPlans, *r.authTTL
	return c
}

// startRESTFront listens on the Iceberg REST port and moves upstream's
// catalog behind it. It runs before upstream's Run.
func (l *launcher) startRESTFront() error {
	flag := l.s3Flag("port.iceberg")
	port := l.num(flag)
	if port <= 0 || l.flags.rest == nil || !*l.flags.rest.enabled {
		return nil
	}
	_, bind := l.ip()
	ln, local, err := util.NewIpAndLocalListeners(bind, port, 0, l.str("ip.bind") == "")
	if err != nil {
		return fmt.Errorf("Iceberg REST catalog with scan planning: listen on port %d: %w (set -%s)", port, err, flag)
	}
	// Below the ephemeral floor: a port the kernel chose could be taken by
	// one of this process's own dials before upstream binds it, and
	// upstream's catalog exits the process when its bind fails.
	inner, below, err := netport.Free(bind, 0, nil)
	if err == nil && !below {
		glog.Warningf("pushdown: no free port below the ephemeral floor %d for upstream's Iceberg catalog; using %d, which an outbound connection may claim before upstream binds it", netport.EphemeralFloor(), inner)
	}
	if err != nil {
		ln.Close()
		if local != nil {
			local.Close()
		}
		return fmt.Errorf("Iceberg REST catalog: no free port for upstream's catalog: %w", err)
	}
	target := bind
	if target == "" || net.ParseIP(target) != nil && net.ParseIP(target).IsUnspecified() {
		target = "127.0.0.1"
	}
	front, err := restplan.New("http://"+net.JoinHostPort(target, strconv.Itoa(inner)), l.flags.rest.config())
	if err != nil {
		return err
	}
	if err := l.cmd.Flag.Set(flag, strconv.Itoa(inner)); err != nil {
		return fmt.Errorf("move upstream's Iceberg REST catalog to port %d: %w", inner, err)
	}
	l.icebergPort, l.front = port, front
	srv := &http.Server{Handler: front, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	for _, lis := range []net.Listener{ln, local} {
		if lis == nil {
			continue
		}
		go func() {
			if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				glog.Errorf("pushdown: Iceberg REST catalog front on %s: %v", lis.Addr(), err)
			}
		}()
	}
	register(func() {
		front.Close()
		_ = srv.Close()
	})
	glog.V(0).Infof("pushdown: Iceberg REST catalog with server-side scan planning on port %d (upstream's catalog moved to %s:%d)", port, target, inner)
	return nil
}
