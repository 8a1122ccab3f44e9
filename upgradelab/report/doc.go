// Package report writes a lab run's results in forms other tools read: JUnit XML for CI
// systems.
//
// The files:
//
//	junit.go  JUnit XML
//	html.go   a run's HTML page and a campaign's summary
//	files.go  the files a run and a campaign write
package report
