module github.com/brokerless/brokerless

go 1.26.8
