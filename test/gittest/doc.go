// Package gittest serves real Git repositories to tests: a bare repository behind
// `git http-backend` on loopback, and a work clone that commits and pushes with the git CLI.
package gittest
