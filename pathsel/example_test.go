package pathsel_test

import (
	"fmt"
	"log"
	"math/rand/v2"

	"github.com/hetquic/hetquic/pathsel"
)

// A client with two networks lets the default strategy choose where each
// request goes and reports what each one cost. The table of completion
// times stands in for measuring real requests.
func Example() {
	const wifi, lte = pathsel.PathID(0), pathsel.PathID(1)
	sel, err := pathsel.New(pathsel.Default(), rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		log.Fatal(err)
	}
	sel.AddPath(wifi) // paths may come and go at any time
	sel.AddPath(lte)

	tctMs := map[pathsel.PathID]float64{wifi: 40, lte: 12} // lte is faster here
	chosen := map[pathsel.PathID]int{}
	for round := range 100 {
		p, err := sel.Choose() // which path for the next request
		if err != nil {
			log.Fatal(err)
		}
		chosen[p]++
		// … send the request on p and time it …
		sel.Observe(p, tctMs[p]+float64(round%3)) // what it cost, in ms
	}
	fmt.Printf("wifi %d, lte %d of 100 requests\n", chosen[wifi], chosen[lte])
	// Output: wifi 2, lte 98 of 100 requests
}
