package web

import (
	"math"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/memory"
)

// queryKey normalises a query key: dashes are accepted for underscores.
func queryKey(k string) string { return strings.ReplaceAll(strings.TrimSpace(k), "-", "_") }

// jobFromQuery fills a job from query parameters named by the JSON keys of
// memory.Job. Keys in extra are skipped (they belong to the request, such
// as model); any other unknown key is an error, so a typo is not silently
// ignored. Constants are given as constants.NAME=value.
func jobFromQuery(q url.Values, extra ...string) (memory.Job, error) {
	var job memory.Job
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, raw := range keys {
		k := queryKey(raw)
		vals := q[raw]
		if contains(extra, k) {
			continue
		}
		if name, ok := strings.CutPrefix(k, "constants."); ok {
			if err := setConstant(&job, raw, name, last(vals)); err != nil {
				return job, err
			}
			continue
		}
		jk, ok := memory.LookupJobKey(k)
		if !ok {
			return job, badRequest(raw, "unknown query key %q (keys are the JSON names of the job options, e.g. seq_len)", raw)
		}
		if err := setField(jk.In(&job), k, vals); err != nil {
			return job, err
		}
	}
	return job, nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func last(vals []string) string {
	if len(vals) == 0 {
		return ""
	}
	return vals[len(vals)-1]
}

func setConstant(job *memory.Job, raw, name, val string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return badRequest(raw, "%s: want a number, got %q", raw, val)
	}
	if job.Constants == nil {
		job.Constants = map[string]float64{}
	}
	job.Constants[name] = f
	return nil
}

// setField parses the query values of key into the job field f.
func setField(f reflect.Value, key string, vals []string) error {
	s := strings.TrimSpace(last(vals))
	if f.Type() == reflect.TypeFor[memory.Stack]() {
		// stack=transformers=4.48.1,torch=2.4.1, as --stack takes it.
		st, err := memory.ParseStack(s)
		if err != nil {
			return badRequest(key, "%s: %v", key, err)
		}
		f.Set(reflect.ValueOf(st))
		return nil
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(s)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || (f.Kind() == reflect.Int && n != int64(int(n))) {
			return badRequest(key, "%s: want an integer, got %q", key, s)
		}
		f.SetInt(n)
	case reflect.Float64:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return badRequest(key, "%s: want a number, got %q", key, s)
		}
		f.SetFloat(x)
	case reflect.Bool:
		b, err := parseBool(key, s)
		if err != nil {
			return err
		}
		f.SetBool(b)
	case reflect.Pointer: // *bool or *int64: set only when given
		switch f.Type().Elem().Kind() {
		case reflect.Bool:
			b, err := parseBool(key, s)
			if err != nil {
				return err
			}
			f.Set(reflect.ValueOf(&b))
		case reflect.Int64:
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return badRequest(key, "%s: want an integer, got %q", key, s)
			}
			f.Set(reflect.ValueOf(&n))
		default:
			return badRequest(key, "%s cannot be given in a query; POST a JSON body instead", key)
		}
	case reflect.Slice: // []string: repeated keys or comma-separated
		var out []string
		for _, v := range vals {
			for _, p := range strings.Split(v, ",") {
				if p = strings.TrimSpace(p); p != "" {
					out = append(out, p)
				}
			}
		}
		f.Set(reflect.ValueOf(out))
	default:
		return badRequest(key, "%s cannot be given in a query; POST a JSON body instead", key)
	}
	return nil
}

func parseBool(key, s string) (bool, error) {
	switch strings.ToLower(s) {
	case "", "1", "true", "yes", "on":
		return true, nil
	case "0", "false", "no", "off":
		return false, nil
	}
	return false, badRequest(key, "%s: want true or false, got %q", key, s)
}
