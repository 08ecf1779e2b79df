// Command hello prints a line and exits. bench/run.sh times it next to
// gpumem: a Go binary that does nothing is the floor for process start-up
// on the machine, so the ratio shows what gpumem's own work costs.
package main

import "fmt"

func main() {
	fmt.Println("hello, world")
}
