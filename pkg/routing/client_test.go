package routing

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestChainStatusOnlyForChainErrors(t *testing.T) {
	assert.Nil(t, ChainStatus(nil))
	assert.Nil(t, ChainStatus(errors.New("other")))
	assert.Nil(t, ChainStatus(status.Error(codes.NotFound, "x")))
	assert.EqualValues(t, 404, ChainStatus(ErrEndOfChain).Code)
	assert.EqualValues(t, 503, ChainStatus(ErrChainIncomplete).Code)
}
