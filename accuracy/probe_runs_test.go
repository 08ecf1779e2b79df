package accuracy

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// campaignStandIn is a results.jsonl of the campaign runner made with the
// stand-in torch of probe/testdata/fakepy: its structure is real, its byte
// counts are a toy allocator's. q05-full-adamw failed once and then ran
// (the later line wins), l1b-full-b1-s1024 ran out of memory, one job was
// skipped for want of bitsandbytes and one failed.
const campaignStandIn = "testdata/campaign-standin.jsonl"

func parseStandIn(t *testing.T) ([]ProbeRun, []CampaignLeft) {
	t.Helper()
	f, err := os.Open(campaignStandIn)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runs, left, err := ParseCampaign(f, campaignStandIn)
	if err != nil {
		t.Fatal(err)
	}
	return runs, left
}

func TestParseCampaign(t *testing.T) {
	runs, left := parseStandIn(t)
	var got []string
	for _, r := range runs {
		got = append(got, r.ID+" "+r.Status)
	}
	want := []string{"q05-full-adamw ok", "q05-generate ok", "l1b-full-b1-s1024 oom"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("measured runs (-want +got):\n%s", diff)
	}
	wantLeft := []CampaignLeft{
		{ID: "l8b-qlora-all-gc", Status: "skipped", Reason: "needs bitsandbytes, which python3 cannot import"},
		{ID: "q05-full-sgd", Status: "failed", Reason: "exception: RuntimeError: fake forward failed on purpose"},
	}
	if diff := cmp.Diff(wantLeft, left); diff != "" {
		t.Errorf("jobs that measured nothing (-want +got):\n%s", diff)
	}
	r := runs[0]
	p := r.Provenance
	if p.Source == "" || p.MeasuredAt == "" || len(p.JobsSHA256) != 64 || len(p.ProbeSHA256) != 64 || len(p.ConfigSHA256) != 64 || p.Steps != 2 || p.Warmup != 1 {
		t.Errorf("provenance %+v: want source, time, hashes and steps", p)
	}
	if r.GPU.Name != "NVIDIA H100 80GB HBM3" || r.GPU.CUDATotalBytes <= 0 || r.GPU.Driver == "" || r.Software["transformers"] == "" {
		t.Errorf("gpu %+v, software %v: want the device, the memory CUDA sees, the driver and the versions", r.GPU, r.Software)
	}
	if r.Job.MicroBatch != 4 || r.Job.SeqLen != 512 || r.Model != "qwen2.5-0.5b" {
		t.Errorf("job %+v of %s: want the campaign's job", r.Job, r.Model)
	}
}

// A record written by WriteProbeRuns reads back the same, and the reader
// is strict about what a record must hold.
func TestProbeRunsRoundTrip(t *testing.T) {
	runs, _ := parseStandIn(t)
	var buf bytes.Buffer
	if err := WriteProbeRuns(&buf, runs); err != nil {
		t.Fatal(err)
	}
	back, err := ReadProbeRuns(bytes.NewReader(append([]byte("# a comment\n\n"), buf.Bytes()...)), "runs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(runs, back, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	first := strings.SplitN(buf.String(), "\n", 2)[0]
	bad := map[string]string{
		"unknown key":   strings.Replace(first, `{"schema"`, `{"colour":1,"schema"`, 1),
		"no provenance": regexp.MustCompile(`"jobs_sha256":"[0-9a-f]*"`).ReplaceAllString(first, `"jobs_sha256":""`),
		"bad status":    strings.Replace(first, `"status":"ok"`, `"status":"failed"`, 1),
		"other schema":  strings.Replace(first, ProbeRunSchema, "gpumem-probe-run/0", 1),
		"duplicate":     first + "\n" + first,
	}
	wantErr := map[string]string{
		"unknown key": "colour", "no provenance": "provenance", "bad status": "status", "other schema": "schema", "duplicate": "also on line 1",
	}
	for name, text := range bad {
		_, err := ReadProbeRuns(strings.NewReader(text), "runs.jsonl")
		if err == nil || !strings.Contains(err.Error(), "runs.jsonl line") || !strings.Contains(err.Error(), wantErr[name]) {
			t.Errorf("%s: error %v, want one naming the line and %q", name, err, wantErr[name])
		}
	}
}

func TestParseCampaignErrors(t *testing.T) {
	data, err := os.ReadFile(campaignStandIn)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	ok := lines[1] // q05-generate, measured
	tests := map[string]struct{ text, want string }{
		"empty":       {"", "no campaign lines"},
		"not json":    {"{", "line 1"},
		"schema":      {strings.Replace(ok, "gpumem-probe-campaign/1", "gpumem-probe/1", 1), "schema"},
		"job key":     {strings.Replace(ok, `"job": {`, `"job": {"colour": 1, `, 1), "colour"},
		"bad result":  {strings.Replace(ok, `"result": {"allocated_peak_bytes": `, `"result": {"allocated_peak_bytes": -`, 1), "result"},
		"no id":       {strings.Replace(ok, `"id": "q05-generate"`, `"id": ""`, 1), "id"},
		"oom as ok":   {strings.Replace(lines[4], `"status": "oom"`, `"status": "ok"`, 1), "status ok but the result failed"},
		"no gpu name": {strings.ReplaceAll(ok, `"name": "NVIDIA H100 80GB HBM3"`, `"name": ""`), "gpu.name"},
	}
	for name, tt := range tests {
		if _, _, err := ParseCampaign(strings.NewReader(tt.text), "results.jsonl"); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one with %q", name, err, tt.want)
		}
	}
}

func TestProbeRunsReport(t *testing.T) {
	runs, _ := parseStandIn(t)
	rep := ProbeRunsReport(runs, Options{})
	if len(rep.Runs) != 3 {
		t.Fatalf("%d rows, want 3", len(rep.Runs))
	}
	for _, r := range rep.Runs {
		if strings.Contains(r.Note, "estimate:") || strings.Contains(r.Note, "catalog") || r.EstimatedDeviceBytes <= 0 {
			t.Errorf("%s: %q (estimate %d): want an estimate on the catalog's H100", r.ID, r.Note, r.EstimatedDeviceBytes)
		}
	}
	train := rep.Runs[0]
	kinds := map[string]bool{}
	for _, c := range train.Rows {
		kinds[c.Kind+" "+c.Name] = true
		if c.MeasuredBytes <= 0 || c.EstimatedBytes <= 0 {
			t.Errorf("%s: row %+v without both sides", train.ID, c)
		}
	}
	for _, want := range []string{"peak allocated", "peak reserved", "peak device", "phase forward", "phase loss", "phase backward", "phase step", "component weights", "component optimizer_states"} {
		if !kinds[want] {
			t.Errorf("%s: no %s row", train.ID, want)
		}
	}
	// Summaries count the two finished runs, never the one that ran out
	// of memory.
	if len(rep.ByMeasure) != 3 || rep.ByMeasure[0].Group != "allocated" || rep.ByMeasure[0].N != 2 {
		t.Errorf("by measure %+v: want allocated, reserved, device over 2 runs", rep.ByMeasure)
	}
	var phases []string
	for _, s := range rep.ByPhase {
		phases = append(phases, s.Group)
	}
	if diff := cmp.Diff([]string{"forward", "loss", "backward", "step", "prefill", "decode"}, phases); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
	// The toy allocator had 6 GB (5.59 GiB for CUDA), below the estimate's
	// 12.7 GiB: the estimate says the job does not fit, rightly.
	oom := rep.Runs[2]
	if oom.Status != StatusOOM || oom.EstimateFits || oom.GPUBytes != runs[2].GPU.CUDATotalBytes {
		t.Errorf("oom row %+v", oom)
	}
	md := rep.Markdown()
	for _, want := range []string{"## Runs measured by gpumem's own probe", "### By measure", "### By phase", "### By component",
		"| q05-full-adamw | NVIDIA H100 80GB HBM3 | ok |", "### Out of memory", "| does not fit (right) |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "No run of gpumem's own probe") {
		t.Error("markdown with runs says there are none")
	}
	// Had CUDA seen 80 GiB, the estimate would have the job fit: a wrong
	// "fits", which the report marks.
	big := runs[2]
	big.GPU.CUDATotalBytes = 80 << 30
	wrong := ProbeRunsReport([]ProbeRun{big}, Options{})
	if !wrong.Runs[0].EstimateFits || !strings.Contains(wrong.Markdown(), "**fits (wrong)**") {
		t.Errorf("a job that ran out of memory where the estimate has it fit: %+v", wrong.Runs[0])
	}
}

// Without runs the section says plainly that nothing has run on a GPU.
func TestProbeReportEmpty(t *testing.T) {
	md := ProbeRunsReport(nil, Options{}).Markdown()
	for _, want := range []string{"## Runs measured by gpumem's own probe", "No run of gpumem's own probe has been measured yet", "nothing in gpumem has run on a GPU"} {
		if !strings.Contains(md, want) {
			t.Errorf("empty section lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "### By measure") {
		t.Error("empty section has tables")
	}
	rep := Run(nil, Options{})
	rep.Probe = &ProbeReport{}
	if !strings.Contains(rep.Markdown(), "No run of gpumem's own probe") {
		t.Error("the report's Markdown leaves out the probe section it was given")
	}
}

// The committed records read and estimate.
func TestBuiltinProbeRuns(t *testing.T) {
	runs, err := BuiltinProbeRuns()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ProbeRunsReport(runs, Options{}).Runs {
		if strings.Contains(r.Note, "estimate:") || strings.HasPrefix(r.Note, "model ") {
			t.Errorf("%s: %s", r.ID, r.Note)
		}
	}
}

func FuzzReadProbeRuns(f *testing.F) {
	data, err := os.ReadFile(campaignStandIn)
	if err != nil {
		f.Fatal(err)
	}
	runs, _, err := ParseCampaign(bytes.NewReader(data), campaignStandIn)
	if err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteProbeRuns(&buf, runs); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte("# comment\n{}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		runs, err := ReadProbeRuns(bytes.NewReader(b), "fuzz")
		if err != nil {
			return
		}
		for _, r := range runs {
			if r.Status != StatusOK && r.Status != StatusOOM {
				t.Fatalf("accepted status %q", r.Status)
			}
			if r.Result.AllocatedPeakBytes < 0 || r.Result.ReservedPeakBytes < 0 {
				t.Fatalf("accepted negative peaks: %+v", r.Result)
			}
		}
		ProbeRunsReport(runs, Options{})
	})
}

func FuzzParseCampaign(f *testing.F) {
	data, err := os.ReadFile(campaignStandIn)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"schema":"gpumem-probe-campaign/1","id":"x","status":"ok"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		runs, left, err := ParseCampaign(bytes.NewReader(b), "fuzz")
		if err != nil {
			return
		}
		for _, r := range runs {
			if err := r.validate(); err != nil {
				t.Fatalf("accepted an invalid run: %v", err)
			}
		}
		for _, l := range left {
			if l.Status == StatusOK || l.Status == StatusOOM {
				t.Fatalf("a measured job left out: %+v", l)
			}
		}
	})
}
