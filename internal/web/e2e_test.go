package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpumem/gpumem/internal/web"
	"github.com/gpumem/gpumem/jobfile"
	"github.com/gpumem/gpumem/memory"
	"github.com/gpumem/gpumem/plan"
	"github.com/gpumem/gpumem/report"
	"github.com/gpumem/gpumem/units"
)

// chromiumPath is Debian's chromium; GPUMEM_CHROMIUM overrides it.
const chromiumPath = "/usr/bin/chromium"

// findChromium returns the browser to drive, failing (never skipping) the
// test when there is none: CI installs Debian's chromium for it.
func findChromium(t *testing.T) string {
	t.Helper()
	p := cmpOr(os.Getenv("GPUMEM_CHROMIUM"), chromiumPath)
	st, err := os.Stat(p)
	if err == nil && !st.IsDir() {
		return p
	}
	if os.Getenv("GPUMEM_CHROMIUM") == "" {
		if found, lerr := exec.LookPath("chromium"); lerr == nil {
			return found
		}
	}
	t.Fatalf("headless Chromium not found at %s (%v): install Debian's chromium with "+
		"'apt-get update && apt-get install -y chromium', or set GPUMEM_CHROMIUM to a Chromium binary", p, err)
	return ""
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// startServer serves the API and page on a loopback port until the test ends.
func startServer(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- web.New(web.Options{}).Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// pageState is what the page shows, read from the DOM.
type pageState struct {
	State      string `json:"state"`
	Query      string `json:"query"`
	Search     string `json:"search"`
	Title      string `json:"title"`
	Peaks      [3]peakText
	Components []struct {
		Name  string `json:"name"`
		Bytes string `json:"bytes"`
		Size  string `json:"size"`
	} `json:"components"`
	Verdict   string   `json:"verdict"`
	MaxBatch  string   `json:"maxBatch"`
	MaxSeq    string   `json:"maxSeq"`
	GPURows   []string `json:"gpuRows"`
	Error     string   `json:"error"`
	ErrorShow bool     `json:"errorShown"`
	Invalid   []string `json:"invalid"`
	Serving   string   `json:"serving"`
	Chart     []string `json:"chart"`
	// Suggestions are the lines of the selected GPU's suggestions.
	Suggestions []string `json:"suggestions"`
}

type peakText struct {
	Bytes string `json:"bytes"`
	Text  string `json:"text"`
}

const snapshotJS = `(() => {
  const q = (s) => document.querySelector(s);
  const peak = (id) => ({ bytes: q(id).dataset.bytes, text: q(id).textContent });
  return {
    state: document.body.dataset.state || '', query: document.body.dataset.query || '', search: location.search,
    title: q('#title').textContent,
    Peaks: [peak('#peak-allocated'), peak('#peak-reserved'), peak('#peak-device')],
    components: [...document.querySelectorAll('#components tbody tr')].map((tr) => ({ name: tr.dataset.name, bytes: tr.dataset.bytes, size: tr.children[1].textContent })),
    verdict: q('#fit-summary').dataset.verdict || '',
    maxBatch: q('#max-batch') ? q('#max-batch').textContent : '',
    maxSeq: q('#max-seq') ? q('#max-seq').textContent : '',
    gpuRows: [...document.querySelectorAll('#gpus tbody tr')].map((tr) => tr.dataset.gpu + '=' + tr.dataset.verdict),
    error: q('#error').textContent, errorShown: !q('#error').hidden,
    invalid: [...document.querySelectorAll('[aria-invalid=true]')].map((e) => e.name),
    serving: q('#serving').textContent,
    suggestions: [...document.querySelectorAll('#fit-suggestions li')].map((li) => li.textContent),
    chart: window.Chart && Chart.getChart(q('#chart')) ? Chart.getChart(q('#chart')).data.datasets.map((d) => d.label + '=' + (d.data[0] ?? '')) : [],
  };
})()`

// waitFor polls until the page has finished a recompute whose query
// satisfies ok, and returns the page's state.
func waitFor(ctx context.Context, t *testing.T, what string, ok func(url.Values) bool) pageState {
	return waitForPage(ctx, t, what, ok, nil)
}

// waitForPage is waitFor that adds the page's console errors to a failure.
func waitForPage(ctx context.Context, t *testing.T, what string, ok func(url.Values) bool, console func() []string) pageState {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var st pageState
	for time.Now().Before(deadline) {
		var err error
		st, err = chromedp.Run(ctx, chromedp.Evaluate[pageState](snapshotJS))
		if err != nil {
			t.Fatalf("%s: read page: %v", what, err)
		}
		if st.State == "ready" || st.State == "error" {
			q, err := url.ParseQuery(st.Query)
			if err == nil && ok(q) {
				return st
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	var msgs []string
	if console != nil {
		msgs = console()
	}
	t.Fatalf("%s: the page did not recompute in time; last state %+v; console: %q", what, st, msgs)
	return st
}

func getJSON(t *testing.T, target string, v any) {
	t.Helper()
	resp, err := http.Get(target)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", target, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
}

// checkAgainstAPI asserts that the numbers on the page are the API's for
// the query the page says it shows, and that the address bar holds it.
func checkAgainstAPI(t *testing.T, base string, st pageState) memory.Result {
	t.Helper()
	if st.State != "ready" {
		t.Fatalf("page in state %q: %s", st.State, st.Error)
	}
	if st.Search != "?"+st.Query {
		t.Errorf("address bar %q does not hold the shown job %q", st.Search, st.Query)
	}
	var res memory.Result
	getJSON(t, base+"/api/estimate?"+st.Query, &res)
	p := res.PerGPU
	for i, want := range []units.Bytes{p.AllocatedPeakBytes, p.ReservedPeakBytes, p.DevicePeakBytes} {
		if st.Peaks[i].Bytes != fmt.Sprint(int64(want)) {
			t.Errorf("peak %d: page has %s bytes, API %d", i, st.Peaks[i].Bytes, want)
		}
		if st.Peaks[i].Text != units.FormatIEC(want) {
			t.Errorf("peak %d: page shows %q, want %q", i, st.Peaks[i].Text, units.FormatIEC(want))
		}
	}
	if len(st.Components) != len(p.Components) {
		t.Fatalf("page has %d components, API %d", len(st.Components), len(p.Components))
	}
	for i, c := range p.Components {
		got := st.Components[i]
		if got.Name != c.Name || got.Bytes != fmt.Sprint(int64(c.Bytes)) || got.Size != units.FormatIEC(c.Bytes) {
			t.Errorf("component %d: page %+v, API %s %d (%s)", i, got, c.Name, c.Bytes, units.FormatIEC(c.Bytes))
		}
	}
	// The stacked bar has one segment per non-empty component, in GiB.
	var bars []string
	for _, c := range p.Components {
		if c.Bytes > 0 {
			// JavaScript writes numbers from 1e-6 to 1e21 as 'f' does.
			bars = append(bars, c.Name+"="+strconv.FormatFloat(float64(c.Bytes)/(1<<30), 'f', -1, 64))
		}
	}
	if len(st.Chart) < len(bars) || fmt.Sprint(st.Chart[:len(bars)]) != fmt.Sprint(bars) {
		t.Errorf("chart segments %v, want %v", st.Chart, bars)
	}
	if !strings.HasPrefix(st.Title, res.Model) {
		t.Errorf("title %q does not name %s", st.Title, res.Model)
	}
	return res
}

// checkPlan asserts the GPU table and the fit of the chosen GPU against /api/plan.
// checkSuggestions compares the page's suggestion lines with the API's:
// one line each, naming every setting by its label with its value, not
// by its JSON key.
func checkSuggestions(t *testing.T, lines []string, api []plan.Suggestion) {
	t.Helper()
	if len(lines) != len(api) {
		t.Fatalf("page lists %d suggestions, API %d", len(lines), len(api))
	}
	for i, s := range api {
		for _, set := range s.Settings {
			if !strings.Contains(lines[i], " = "+set.Value) || strings.Contains(lines[i], set.String()) {
				t.Errorf("suggestion %q: page line %q does not name %s by its label", s.Change, lines[i], set)
			}
		}
	}
}

func checkPlan(t *testing.T, base string, st pageState, gpuName string) {
	t.Helper()
	q, _ := url.ParseQuery(st.Query)
	q.Del("gpu")
	var rep web.PlanReport
	getJSON(t, base+"/api/plan?"+q.Encode(), &rep)
	if len(st.GPURows) != len(rep.GPUs) {
		t.Fatalf("page lists %d GPUs, API %d", len(st.GPURows), len(rep.GPUs))
	}
	for i, g := range rep.GPUs {
		want := g.GPU.Name + "=" + string(g.Fit.Verdict)
		if g.Error != "" {
			want = g.GPU.Name + "=error"
		}
		if st.GPURows[i] != want {
			t.Errorf("GPU row %d: page %q, API %q", i, st.GPURows[i], want)
		}
		if g.GPU.Name != gpuName {
			continue
		}
		if st.Verdict != string(g.Fit.Verdict) {
			t.Errorf("%s verdict: page %q, API %q", gpuName, st.Verdict, g.Fit.Verdict)
		}
		if want := answerText(g.MaxBatch, ""); st.MaxBatch != want {
			t.Errorf("largest batch: page %q, API %q", st.MaxBatch, want)
		}
		if want := answerText(g.MaxSeqLen, " tokens"); st.MaxSeq != want {
			t.Errorf("longest sequence: page %q, API %q", st.MaxSeq, want)
		}
		checkSuggestions(t, st.Suggestions, g.Suggestions)
	}
}

// answerText is how the page writes a search answer.
func answerText(a *plan.Answer, unit string) string {
	switch {
	case a == nil:
		return "-"
	case a.Error != "" && a.NoFit:
		return "none"
	case a.Error != "":
		return "unknown"
	case a.Value >= a.Limit:
		return fmt.Sprintf("%d%s+", a.Value, unit)
	}
	return fmt.Sprintf("%d%s", a.Value, unit)
}

// setField sets a form field as a user would; chromedp's SetValue fires
// the input and change events the page listens to.
func setField(ctx context.Context, t *testing.T, sel, value string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(sel), value)); err != nil {
		t.Fatalf("set %s = %s: %v", sel, value, err)
	}
}

// typeInto clears a text field and types value key by key. (The field is
// cleared by script: SetValue cannot send an empty string.)
func typeInto(ctx context.Context, t *testing.T, sel, value string) {
	t.Helper()
	clear := chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).value = ''`, sel))(ctx, tg)
		return err
	})
	if err := chromedp.Do(ctx, clear, chromedp.SendKeys(chromedp.CSS(sel), value)); err != nil {
		t.Fatalf("type %q into %s: %v", value, sel, err)
	}
}

// newBrowser starts headless Chromium with a fresh profile.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(findChromium(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	return ctx
}

// collectConsole gathers the page's console errors, exceptions and CSP reports.
func collectConsole(ctx context.Context) func() []string {
	var mu sync.Mutex
	var msgs []string
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
				mu.Lock()
				msgs = append(msgs, m.String()+" ("+m.URL+")")
				mu.Unlock()
			}
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), msgs...)
	}
}

func saveScreenshot(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("screenshot is not a PNG")
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "screenshots"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

func TestPageInChromium(t *testing.T) {
	base := startServer(t)
	ctx := newBrowser(t)
	consoleErrors := collectConsole(ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/?model=llama3-8b&seq_len=2048&gpu=H100-SXM")); err != nil {
		t.Fatalf("open the page: %v", err)
	}

	st := waitForPage(ctx, t, "first load", func(q url.Values) bool { return q.Get("seq_len") == "2048" }, consoleErrors)
	checkAgainstAPI(t, base, st)
	checkPlan(t, base, st, "H100-SXM")
	checkLists(ctx, t, base)
	checkFormatting(ctx, t)

	// Type a sequence length key by key: the debounced recompute settles on the last value.
	typeInto(ctx, t, "#f-seq_len", "4096")
	st = waitFor(ctx, t, "seq_len 4096", func(q url.Values) bool { return q.Get("seq_len") == "4096" })
	checkAgainstAPI(t, base, st)

	setField(ctx, t, "#f-method", "lora")
	st = waitFor(ctx, t, "method lora", func(q url.Values) bool { return q.Get("method") == "lora" })
	res := checkAgainstAPI(t, base, st)
	if res.TrainableParams >= res.TotalParams {
		t.Errorf("LoRA trains %d of %d parameters", res.TrainableParams, res.TotalParams)
	}
	checkPlan(t, base, st, "H100-SXM")

	setField(ctx, t, "#f-model", "qwen2.5-7b")
	st = waitFor(ctx, t, "model qwen2.5-7b", func(q url.Values) bool { return q.Get("model") == "qwen2.5-7b" })
	if res := checkAgainstAPI(t, base, st); res.Model != "Qwen/Qwen2.5-7B" {
		t.Errorf("model = %s", res.Model)
	}
	checkPlan(t, base, st, "H100-SXM")
	saveScreenshot(ctx, t, "lora-qwen2.5-7b")

	// The exported JSON is a POST body that gives the same estimate.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#export"))); err != nil {
		t.Fatalf("export: %v", err)
	}
	body, err := chromedp.Run(ctx, chromedp.Poll[string](`document.querySelector('#export-json').value`, chromedp.WithPollingTimeout(5*time.Second)))
	if err != nil {
		t.Fatalf("read the exported job: %v", err)
	}
	checkExport(t, base, body, st.Query)

	// A shared link restores the form in a fresh page.
	shared := base + "/" + st.Search
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(shared)); err != nil {
		t.Fatal(err)
	}
	st2 := waitFor(ctx, t, "shared link", func(q url.Values) bool { return q.Get("model") == "qwen2.5-7b" })
	if st2.Query != st.Query || st2.Peaks != st.Peaks {
		t.Errorf("shared link shows %q %v, want %q %v", st2.Query, st2.Peaks, st.Query, st.Peaks)
	}
	for sel, want := range map[string]string{"#f-method": "lora", "#f-seq_len": "4096", "#f-model": "qwen2.5-7b", "#f-gpu": "H100-SXM"} {
		got, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(sel)))
		if err != nil || got != want {
			t.Errorf("shared link: %s = %q (%v), want %q", sel, got, err, want)
		}
	}

	// A job pasted as JSON (a job file) fills the form.
	imported := `{"model": "qwen2.5-7b", "mode": "inference", "batch": 4, "prompt_len": 1024, "gen_len": 128, "kv_cache_dtype": "fp8", "constants": {"fragmentation": 0.05}}`
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#import")), chromedp.SetValue(chromedp.CSS("#export-json"), imported),
		chromedp.Click(chromedp.CSS("#apply-json"))); err != nil {
		t.Fatal(err)
	}
	st = waitFor(ctx, t, "imported JSON", func(q url.Values) bool { return q.Get("kv_cache_dtype") == "fp8" })
	checkAgainstAPI(t, base, st)
	if q, _ := url.ParseQuery(st.Query); q.Get("batch") != "4" || q.Get("prompt_len") != "1024" || q.Get("constants.fragmentation") != "0.05" || q.Get("mode") != "inference" {
		t.Errorf("imported job became %q", st.Query)
	}
	checkExport(t, base, imported, st.Query)

	// A preset switches to serving.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#presets button[data-preset="Serve 8B on H100"]`))); err != nil {
		t.Fatal(err)
	}
	st = waitFor(ctx, t, "serving preset", func(q url.Values) bool { return q.Get("mode") == "serving" })
	if res := checkAgainstAPI(t, base, st); res.Serving == nil {
		t.Errorf("serving preset: no serving capacity in the result")
	} else if want := "KV cache pool: " + units.FormatIEC(res.Serving.KVPoolBytes); !strings.HasPrefix(st.Serving, want) {
		t.Errorf("serving line %q, want it to start with %q", st.Serving, want)
	}
	checkPlan(t, base, st, "H100-SXM")
	saveScreenshot(ctx, t, "serve-8b-h100")

	// An impossible job shows the API's error under the field's label
	// and marks the field.
	setField(ctx, t, "#f-tp", "3")
	st = waitFor(ctx, t, "tp 3", func(q url.Values) bool { return q.Get("tp") == "3" })
	if st.State != "error" || !st.ErrorShow || !strings.HasPrefix(st.Error, "Tensor parallel: ") || !strings.Contains(st.Error, "tp=3") ||
		len(st.Invalid) != 1 || st.Invalid[0] != "tp" {
		t.Errorf("tp=3: state %q, error %q shown=%v, invalid %v", st.State, st.Error, st.ErrorShow, st.Invalid)
	}

	// A job that does not fit lists the plan's suggestions, each setting
	// named by its form label.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/?model=llama3-8b&seq_len=4096&gpu=L4")); err != nil {
		t.Fatal(err)
	}
	st = waitFor(ctx, t, "job over an L4", func(q url.Values) bool { return q.Get("gpu") == "L4" })
	checkPlan(t, base, st, "L4")
	if len(st.Suggestions) == 0 {
		t.Error("a full fine-tune of an 8B model on an L4: the page shows no suggestions")
	}

	// Exact GPU bytes and constant overrides survive a link and an edit.
	link := "/?model=llama3-8b&mode=serving&gpu_memory_bytes=85520809984&constants.fragmentation=0.2"
	if err := chromedp.Do(ctx, chromedp.Navigate(base+link)); err != nil {
		t.Fatal(err)
	}
	st = waitFor(ctx, t, "runtime link", func(q url.Values) bool { return q.Get("gpu_memory_bytes") != "" })
	checkAgainstAPI(t, base, st)
	if q, _ := url.ParseQuery(st.Query); q.Get("gpu_memory_bytes") != "85520809984" || q.Get("constants.fragmentation") != "0.2" {
		t.Errorf("runtime link became %q", st.Query)
	}
	for sel, want := range map[string]string{"#f-gpu_memory_bytes": "79.647", "#f-constants": "fragmentation=0.2"} {
		if got, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(sel))); err != nil || got != want {
			t.Errorf("%s = %q (%v), want %q", sel, got, err, want)
		}
	}
	typeInto(ctx, t, "#f-constants", "fragmentation=0.3")
	st = waitFor(ctx, t, "constant edited", func(q url.Values) bool { return q.Get("constants.fragmentation") == "0.3" })
	checkAgainstAPI(t, base, st)

	if msgs := consoleErrors(); len(msgs) > 0 {
		// The tp=3 request answers 400, which Chromium logs as a failed resource load.
		var other []string
		for _, m := range msgs {
			if !strings.Contains(m, "400 (Bad Request)") {
				other = append(other, m)
			}
		}
		if len(other) > 0 {
			t.Errorf("console errors (CSP violations, exceptions):\n%s", strings.Join(other, "\n"))
		}
	}
}

func checkExport(t *testing.T, base, body, query string) {
	t.Helper()
	var job map[string]any
	if err := json.Unmarshal([]byte(body), &job); err != nil {
		t.Fatalf("exported job %q is not JSON: %v", body, err)
	}
	if _, err := jobfile.Parse([]byte(body), "gpumem-job.json"); err != nil {
		t.Errorf("exported job is not a job file: %v", err)
	}
	resp, err := http.Post(base+"/api/estimate", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	posted, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST the exported job: %d %s", resp.StatusCode, posted)
	}
	resp2, err := http.Get(base + "/api/estimate?" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	got, _ := io.ReadAll(resp2.Body)
	if !bytes.Equal(posted, got) {
		t.Errorf("exported job %s estimates differently from the page's query %s", body, query)
	}
}

// checkLists asserts that the model, GPU and optimizer pickers hold the
// API's catalogs.
func checkLists(ctx context.Context, t *testing.T, base string) {
	t.Helper()
	var models []report.ModelRow
	getJSON(t, base+"/api/models", &models)
	var gpus []struct{ Name string }
	getJSON(t, base+"/api/gpus", &gpus)
	var opts []struct {
		Name    string
		Aliases []string
	}
	getJSON(t, base+"/api/optimizers", &opts)
	wantModels, wantOpts := 0, 0
	for _, m := range models {
		wantModels += 1 + len(m.Aliases)
	}
	for _, o := range opts {
		wantOpts += 1 + len(o.Aliases)
	}
	got, err := chromedp.Run(ctx, chromedp.Poll[[]int](`(() => {
	  const n = (s) => document.querySelectorAll(s).length;
	  const c = [n('#models option'), n('#f-gpu option'), n('#f-optimizer-list option')];
	  return c[2] > 0 ? c : null;
	})()`, chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil {
		t.Fatalf("pickers not filled: %v", err)
	}
	// The GPU picker has a "none" entry as well.
	if want := []int{wantModels, len(gpus) + 1, wantOpts}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("pickers hold %v entries (models, GPUs, optimizers), want %v", got, want)
	}
}

// checkFormatting compares the page's byte formatting with the CLI's
// (units.FormatIEC), on exact rounding ties and unit boundaries.
func checkFormatting(ctx context.Context, t *testing.T) {
	t.Helper()
	sizes := []int64{0, 1, 1023, 1024, 1536, 8519680, 8 << 20, 9 << 27, 1<<30 + 1<<27, 3<<30 + 3<<27, 85520809984, 1 << 40, 5<<40 + 5<<37}
	js, err := json.Marshal(sizes)
	if err != nil {
		t.Fatal(err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](fmt.Sprintf(`%s.map(formatIEC)`, js)))
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range sizes {
		if want := units.FormatIEC(units.Bytes(b)); i >= len(got) || got[i] != want {
			t.Errorf("page formats %d bytes as %q, the CLI as %q", b, got, want)
		}
	}
	counts := []int64{0, 999, 1000, 1250, 999949, 6815744, 8030261248, 671026419200, 1_500_000_000_000}
	js, _ = json.Marshal(counts)
	got, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](fmt.Sprintf(`%s.map(formatParams)`, js)))
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range counts {
		if want := units.Params(n).String(); i >= len(got) || got[i] != want {
			t.Errorf("page formats %d parameters as %q, the CLI as %q", n, got, want)
		}
	}
}
