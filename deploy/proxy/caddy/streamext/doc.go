// Package streamext holds the project's layer-4 handlers for streams
// (docs/streams.md): refusals that say why, one log line per connection naming the
// upstream a selection policy wrapper noted for it, and the time bound of the bouncer
// warm-up route.
package streamext
