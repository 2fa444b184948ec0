// Package streamext holds the project's layer-4 handlers for streams
// (docs/streams.md): refusals that say why, and one log line per connection.
package streamext
