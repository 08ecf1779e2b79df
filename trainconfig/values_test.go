package trainconfig

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/memory"
)

// TestSettingsSetTheirKey checks that each setter of the settings tables
// writes the memory.Job field whose JSON key it is listed under, and no
// other field.
func TestSettingsSetTheirKey(t *testing.T) {
	setters := map[string]func(*memory.Job){}
	for k, set := range intSettings {
		setters[k] = func(j *memory.Job) { set(j, 3) }
	}
	for k, set := range boolSettings {
		setters[k] = func(j *memory.Job) { set(j, true) }
	}
	for k, set := range stringSettings {
		setters[k] = func(j *memory.Job) { set(j, "x") }
	}
	for key, set := range setters {
		t.Run(key, func(t *testing.T) {
			jk, ok := memory.LookupJobKey(key)
			if !ok {
				t.Fatalf("%q is not a memory.Job JSON key", key)
			}
			var j memory.Job
			set(&j)
			if jk.In(&j).IsZero() {
				t.Errorf("field of %s not set", key)
			}
			jk.In(&j).SetZero()
			if !reflect.ValueOf(j).IsZero() {
				t.Errorf("other fields changed: %+v", j)
			}
		})
	}
}

func TestBoolSettingGradCheckpoint(t *testing.T) {
	for _, tt := range []struct {
		on   bool
		want string
	}{{true, "full"}, {false, "none"}} {
		var j memory.Job
		boolSettings["grad_checkpoint"](&j, tt.on)
		if j.GradCheckpoint != tt.want {
			t.Errorf("grad_checkpoint %v: GradCheckpoint = %q, want %q", tt.on, j.GradCheckpoint, tt.want)
		}
	}
}

// TestSettingKeysAtCallSites checks that every intKey, dsInt, boolKey and
// stringKey call names, as a literal, a job key of its settings table:
// an unlisted key would have no setter.
func TestSettingKeysAtCallSites(t *testing.T) {
	tables := map[string]func(string) bool{
		"intKey":    func(k string) bool { return intSettings[k] != nil },
		"dsInt":     func(k string) bool { return intSettings[k] != nil },
		"boolKey":   func(k string) bool { return boolSettings[k] != nil },
		"stringKey": func(k string) bool { return stringSettings[k] != nil },
	}
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || tables[sel.Sel.Name] == nil || len(call.Args) < 3 {
				return true
			}
			calls++
			lit, ok := call.Args[2].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				t.Errorf("%s: %s: the job key is not a string literal", fset.Position(call.Pos()), sel.Sel.Name)
				return true
			}
			if key, _ := strconv.Unquote(lit.Value); !tables[sel.Sel.Name](key) {
				t.Errorf("%s: %s(%s): no setter for that job key", fset.Position(call.Pos()), sel.Sel.Name, key)
			}
			return true
		})
	}
	if calls < 30 {
		t.Errorf("found %d setting calls, want the package's 30 or more", calls)
	}
}
