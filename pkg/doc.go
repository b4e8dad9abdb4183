// Package pkg is the shared library of apichain's services.
package pkg
