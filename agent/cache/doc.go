// Package cache is ct-client's prefetch cache: responses ct-server pushed
// (or fetched on a hint), kept on disk under an LRU size bound and served to
// apps while fresh by their Cache-Control or Expires. It is apart from the
// client because it is a store with its own rules and restart handling; its
// clock comes in as an argument, so its tests need no waiting.
package cache
