package launch

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
	_ "unsafe" // go:linkname

	"github.com/seaweedfs/seaweedfs/weed/glog"
	_ "github.com/seaweedfs/seaweedfs/weed/util/grace"
)

// Upstream's grace package owns SIGINT/SIGTERM: on a signal it runs its
// shutdown hooks (last registered first) and exits. Its hooks are registered
// by the services as they start, so a hook of ours could land anywhere in
// that order. To stop the pushdown services strictly before upstream's
// hooks, the signals are taken from grace's channel while pushdown services
// run, and handed back to it once our services have stopped.
//
//go:linkname graceSignalChan github.com/seaweedfs/seaweedfs/weed/util/grace.signalChan
var graceSignalChan chan os.Signal

var interceptOnce sync.Once

// shutdownSignals are the signals grace treats as "shut down".
var shutdownSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGALRM}

func interceptSignals() {
	interceptOnce.Do(func() {
		if graceSignalChan == nil {
			glog.Warningf("pushdown: cannot order shutdown before upstream hooks; pushdown services stop with the process")
			return
		}
		signal.Reset(shutdownSignals...)
		ours := make(chan os.Signal, 1)
		signal.Notify(ours, shutdownSignals...)
		go func() {
			sig := <-ours
			glog.V(0).Infof("pushdown: %v received, stopping pushdown services", sig)
			StopAll()
			signal.Stop(ours)
			// Give the signal to upstream, which runs its hooks and exits.
			signal.Notify(graceSignalChan, shutdownSignals...)
			graceSignalChan <- sig
		}()
	})
}
