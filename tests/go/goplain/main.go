// goplain: a Go program without crypto/tls, for the Go probe finder's "not probed" reason.
package main

import "fmt"

func main() { fmt.Println("plain") }
