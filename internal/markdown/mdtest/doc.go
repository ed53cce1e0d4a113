// Package mdtest renders Markdown to HTML as GitHub reads it, for tests that check what a
// hostile value can do to gpuctl's Markdown output. Only tests import it.
package mdtest
