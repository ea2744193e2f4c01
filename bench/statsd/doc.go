// Package statsd compares brokerless's StatsD client with
// github.com/DataDog/datadog-go/v5 and github.com/cactus/go-statsd-client
// on the same operations, in the same run: see bench/README.md.
package statsd
