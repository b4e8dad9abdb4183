module github.com/apichain/apichain/services/aggregator

go 1.26.0

require (
	github.com/apichain/apichain/gen v0.0.0
	github.com/apichain/apichain/pkg v0.0.0
)

replace (
	github.com/apichain/apichain/gen => ../../gen
	github.com/apichain/apichain/pkg => ../../pkg
)
