package integration

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
)

// chunkHolders are the volume servers (host:port) holding a chunk of the
// file at an s3:// location, from the filer's entry and the master's
// volume lookup.
func chunkHolders(t *testing.T, mc *harness.MultiCluster, location string) []string {
	t.Helper()
	path := "/buckets/" + strings.TrimPrefix(location, "s3://")
	var entry struct {
		Chunks []struct {
			FileID string `json:"file_id"`
		} `json:"chunks"`
	}
	getJSON(t, "http://"+mc.FilerAddr()+path+"?metadata=true", &entry)
	if len(entry.Chunks) == 0 {
		t.Fatalf("%s: the filer lists no chunks", path)
	}
	var out []string
	for _, ch := range entry.Chunks {
		vid, _, _ := strings.Cut(ch.FileID, ",")
		var lookup struct {
			Locations []struct {
				URL string `json:"url"`
			} `json:"locations"`
		}
		getJSON(t, "http://"+mc.MasterAddr()+"/dir/lookup?volumeId="+vid, &lookup)
		for _, l := range lookup.Locations {
			if !slices.Contains(out, l.URL) {
				out = append(out, l.URL)
			}
		}
	}
	return out
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// Three volume servers on three loopback addresses (separate hosts to one
// another), every volume replicated twice: each file's row groups are
// filtered by the volume service beside a server holding its chunks, and
// when the server named for the most files is killed in the middle of a
// query, the answer is still exactly the plain read's — the failed calls
// read those row groups here, from the surviving copies, counted.
func TestRowsFilteredOnThreeHostsStayExactWhenOneIsKilledMidQuery(t *testing.T) {
	t.Parallel() // its own cluster: runs beside another such test (CI time)
	mc := harness.StartMulti(t, harness.MultiOptions{Volumes: 3, Replication: "001", DistinctHosts: true})
	c := &mc.Cluster
	weed := pushdownCLI(t, c)
	const name = "multi_scan.events"
	weed("demo", "-table", name, "-rows", "36000", "-files", "6", "-rowGroupRows", "2000", "-indexed", "none")
	const where = "status = 'error' AND message LIKE '%/api/v1/%'"
	sel := []string{"id", "tenant_id", "status", "message"}
	want, _, err := readAs(t, c, connector.Options{NoPushdown: true}, name, where, sel...)
	if err != nil || len(want) == 0 {
		t.Fatalf("plain read: %d rows, %v", len(want), err)
	}
	resp, err := connectorExplain(t, c, name, where)
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]int{}
	for _, f := range resp.GetFiles() {
		addr := f.GetReadEndpoint()
		i := slices.Index(mc.VolumePushdownAddrs, addr)
		if i < 0 {
			t.Fatalf("%s: the plan names %q, not one of the volume services %v", f.GetFile(), addr, mc.VolumePushdownAddrs)
		}
		if holders := chunkHolders(t, mc, f.GetFile()); !slices.Contains(holders, mc.VolumeServers[i]) {
			t.Fatalf("%s: the plan names the service beside %s, which holds none of its chunks (held by %v)", f.GetFile(), mc.VolumeServers[i], holders)
		}
		named[addr]++
	}
	if len(named) < 2 {
		t.Fatalf("the plan names %v for %d files: want the work spread over several hosts", named, len(resp.GetFiles()))
	}
	got, st, err := readAs(t, c, connector.Options{FilterAt: connector.FilterVolume}, name, where, sel...)
	if err != nil || strings.Join(got, "\n") != strings.Join(want, "\n") || st.FilterVolumeRowGroups == 0 || st.FilterHereRowGroups != 0 || st.FilterVolumeFallbacks != 0 {
		t.Fatalf("healthy, -filterAt volume: %d rows of %d plain, %v, stats %+v", len(got), len(want), err, st)
	}
	victim := 0
	for i, addr := range mc.VolumePushdownAddrs {
		if named[addr] > named[mc.VolumePushdownAddrs[victim]] {
			victim = i
		}
	}
	killed := false
	o := connector.Options{FilterAt: connector.FilterVolume, Workers: 1, Progress: killAfterFirstFile(t, mc, victim, named, &killed)}
	got, st, err = readAs(t, c, o, name, where, sel...)
	if err != nil {
		t.Fatalf("query while a volume server dies: %v", err)
	}
	if !killed || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("query while a volume server dies (killed %v): %d rows, plain %d\n%s", killed, len(got), len(want), firstDiff(got, want))
	}
	if st.FilterVolumeRowGroups == 0 || st.FilterVolumeFallbacks+st.FilterHereRowGroups == 0 {
		t.Fatalf("after the kill: stats %+v: want row groups filtered by the volume and some read here", st)
	}
	t.Logf("after the kill: %d row groups filtered by volumes, %d here (%s), %d fallbacks (%s)", st.FilterVolumeRowGroups, st.FilterHereRowGroups, st.FilterHereReason,
		st.FilterVolumeFallbacks, st.FilterFallbackReason)
}

// killAfterFirstFile is a connector Progress callback killing volume server
// victim (named for named[its service] files) when the first file is read.
func killAfterFirstFile(t *testing.T, mc *harness.MultiCluster, victim int, named map[string]int, killed *bool) func(done, total int) {
	return func(done, total int) {
		if !*killed {
			*killed = true
			t.Logf("killing volume server %s (pushdown %s, named for %d of %d files) after file %d", mc.VolumeServers[victim], mc.VolumePushdownAddrs[victim], named[mc.VolumePushdownAddrs[victim]], total, done)
			mc.Volumes[victim].Kill()
		}
	}
}
