// Package studies holds the simulator's validation studies against papers
// and other simulators — De Coninck & Bonaventure's CoNEXT 2017 scenario
// classes (conext17), NewReno against the Mathis and Padhye models
// (mathis), and NewReno under loss against ns-3 (lossregime) — apart from
// sim/runner's experiment-file engine: each builds its own runs and prints the
// markdown table a doc's generated block holds (hetquic sim conext17 |
// mathis | lossregime).
package studies
