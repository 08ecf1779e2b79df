package web

import (
	"container/list"
	"sync"
)

// lru is a map of at most max entries that drops the least recently used
// one to make room. It is safe for concurrent use.
type lru[K comparable, V any] struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *lruEntry, most recently used first
	items map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key K
	val V
}

func newLRU[K comparable, V any](max int) *lru[K, V] {
	return &lru[K, V]{max: max, order: list.New(), items: make(map[K]*list.Element, max)}
}

// get returns the value of key and marks it used.
func (c *lru[K, V]) get(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*lruEntry[K, V]).val, true
}

// add sets key to val, dropping the least recently used entry when full.
func (c *lru[K, V]) add(key K, val V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		e.Value.(*lruEntry[K, V]).val = val
		c.order.MoveToFront(e)
		return
	}
	if c.order.Len() >= c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*lruEntry[K, V]).key)
	}
	c.items[key] = c.order.PushFront(&lruEntry[K, V]{key, val})
}

// len returns the number of entries.
func (c *lru[K, V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
