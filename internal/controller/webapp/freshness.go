package webapp

import "time"

// cacheLagRetry is how soon a reconcile that read an object older than its own last write runs
// again (see package cachelag).
const cacheLagRetry = 100 * time.Millisecond
