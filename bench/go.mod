module github.com/brokerless/brokerless/bench

go 1.26.8

replace github.com/brokerless/brokerless => ../

require (
	github.com/DataDog/datadog-go/v5 v5.9.1
	github.com/brokerless/brokerless v0.0.0-00010101000000-000000000000
	github.com/cactus/go-statsd-client/v5 v5.1.0
	github.com/pebbe/zmq4 v1.4.0
)

require (
	github.com/Microsoft/go-winio v0.5.0 // indirect
	github.com/go-zeromq/goczmq/v4 v4.2.2 // indirect
	github.com/go-zeromq/zmq4 v0.17.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)
