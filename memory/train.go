package memory

import (
	"errors"

	"github.com/gpumem/gpumem/model"
)

// estimateTraining is replaced by the training memory model.
func estimateTraining(m *model.Model, job Job) (Result, error) {
	return Result{}, errors.New("training estimate: not implemented yet")
}
