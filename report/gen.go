//go:build ignore

// gen writes zz_generated.json.go, the JSON encoders of the types listed
// in internal/jsongen's Roots; run it with go generate ./report.
package main

import (
	"log"
	"os"

	"github.com/gpumem/gpumem/internal/jsongen"
)

func main() {
	src, err := jsongen.Generate()
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("zz_generated.json.go", src, 0o644); err != nil {
		log.Fatal(err)
	}
}
