// Command hello is the small static binary the ociimage tests put into images: it prints its
// user id and arguments.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Printf("hello uid=%d args=%q\n", os.Getuid(), os.Args[1:])
}
