package v2store

// Stats counts the store's operations (GET /v2/stats/store), with upstream's field names.
type Stats struct {
	GetSuccess              uint64 `json:"getsSuccess"`
	GetFail                 uint64 `json:"getsFail"`
	SetSuccess              uint64 `json:"setsSuccess"`
	SetFail                 uint64 `json:"setsFail"`
	DeleteSuccess           uint64 `json:"deleteSuccess"`
	DeleteFail              uint64 `json:"deleteFail"`
	UpdateSuccess           uint64 `json:"updateSuccess"`
	UpdateFail              uint64 `json:"updateFail"`
	CreateSuccess           uint64 `json:"createSuccess"`
	CreateFail              uint64 `json:"createFail"`
	CompareAndSwapSuccess   uint64 `json:"compareAndSwapSuccess"`
	CompareAndSwapFail      uint64 `json:"compareAndSwapFail"`
	CompareAndDeleteSuccess uint64 `json:"compareAndDeleteSuccess"`
	CompareAndDeleteFail    uint64 `json:"compareAndDeleteFail"`
	ExpireCount             uint64 `json:"expireCount"`
	Watchers                uint64 `json:"watchers"`
}

type op int

const (
	opSet op = iota
	opDelete
	opUpdate
	opCreate
	opCAS
	opCAD
)

// count is called with the store's write lock held (reads are counted apart).
func (s *Stats) count(o op, ok bool) {
	var c *uint64
	switch o {
	case opSet:
		c = pick(ok, &s.SetSuccess, &s.SetFail)
	case opDelete:
		c = pick(ok, &s.DeleteSuccess, &s.DeleteFail)
	case opUpdate:
		c = pick(ok, &s.UpdateSuccess, &s.UpdateFail)
	case opCreate:
		c = pick(ok, &s.CreateSuccess, &s.CreateFail)
	case opCAS:
		c = pick(ok, &s.CompareAndSwapSuccess, &s.CompareAndSwapFail)
	case opCAD:
		c = pick(ok, &s.CompareAndDeleteSuccess, &s.CompareAndDeleteFail)
	}
	*c++
}

func pick(ok bool, yes, no *uint64) *uint64 {
	if ok {
		return yes
	}
	return no
}
