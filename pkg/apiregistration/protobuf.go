package apiregistration

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// APIService's protobuf form, kube-aggregator's generated.proto for apiregistration.k8s.io/v1
// (field numbers and all), written as its gogo-generated code writes it: every scalar always,
// pointers and byte slices when set, embedded messages always, in field order. kube-apiserver
// keeps APIServices in etcd in this form; apichain reads and writes it so that either server
// reads the other's.

// Marshal encodes the APIService.
func (a *APIService) Marshal() ([]byte, error) {
	meta, err := a.ObjectMeta.Marshal()
	if err != nil {
		return nil, err
	}
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	b = protowire.AppendBytes(b, meta)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendBytes(b, a.Spec.marshal())
	status, err := a.Status.marshal()
	if err != nil {
		return nil, err
	}
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	return protowire.AppendBytes(b, status), nil
}

func (s *APIServiceSpec) marshal() []byte {
	var b []byte
	if r := s.Service; r != nil {
		var ref []byte
		ref = appendString(ref, 1, r.Namespace)
		ref = appendString(ref, 2, r.Name)
		if r.Port != nil {
			ref = appendInt32(ref, 3, *r.Port)
		}
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, ref)
	}
	b = appendString(b, 2, s.Group)
	b = appendString(b, 3, s.Version)
	b = protowire.AppendTag(b, 4, protowire.VarintType)
	b = protowire.AppendVarint(b, protowire.EncodeBool(s.InsecureSkipTLSVerify))
	if s.CABundle != nil {
		b = protowire.AppendTag(b, 5, protowire.BytesType)
		b = protowire.AppendBytes(b, s.CABundle)
	}
	b = appendInt32(b, 7, s.GroupPriorityMinimum)
	return appendInt32(b, 8, s.VersionPriority)
}

func (s *APIServiceStatus) marshal() ([]byte, error) {
	var b []byte
	for _, c := range s.Conditions {
		t, err := c.LastTransitionTime.Marshal()
		if err != nil {
			return nil, err
		}
		var cb []byte
		cb = appendString(cb, 1, string(c.Type))
		cb = appendString(cb, 2, string(c.Status))
		cb = protowire.AppendTag(cb, 3, protowire.BytesType)
		cb = protowire.AppendBytes(cb, t)
		cb = appendString(cb, 4, c.Reason)
		cb = appendString(cb, 5, c.Message)
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, cb)
	}
	return b, nil
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendInt32(b []byte, num protowire.Number, v int32) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v)) // sign-extended, as gogo writes int32
}

// Unmarshal decodes an APIService; unknown fields are skipped, as generated code does.
func (a *APIService) Unmarshal(data []byte) error {
	*a = APIService{}
	return fields(data, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			return a.ObjectMeta.Unmarshal(v)
		case num == 2 && typ == protowire.BytesType:
			return a.Spec.unmarshal(v)
		case num == 3 && typ == protowire.BytesType:
			return a.Status.unmarshal(v)
		}
		return nil
	})
}

func (s *APIServiceSpec) unmarshal(data []byte) error {
	return fields(data, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			s.Service = &ServiceReference{}
			return fields(v, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
				switch {
				case num == 1 && typ == protowire.BytesType:
					s.Service.Namespace = string(v)
				case num == 2 && typ == protowire.BytesType:
					s.Service.Name = string(v)
				case num == 3 && typ == protowire.VarintType:
					port := int32(n)
					s.Service.Port = &port
				}
				return nil
			})
		case num == 2 && typ == protowire.BytesType:
			s.Group = string(v)
		case num == 3 && typ == protowire.BytesType:
			s.Version = string(v)
		case num == 4 && typ == protowire.VarintType:
			s.InsecureSkipTLSVerify = n != 0
		case num == 5 && typ == protowire.BytesType:
			s.CABundle = append([]byte{}, v...)
		case num == 7 && typ == protowire.VarintType:
			s.GroupPriorityMinimum = int32(n)
		case num == 8 && typ == protowire.VarintType:
			s.VersionPriority = int32(n)
		}
		return nil
	})
}

func (s *APIServiceStatus) unmarshal(data []byte) error {
	return fields(data, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if num != 1 || typ != protowire.BytesType {
			return nil
		}
		var c APIServiceCondition
		err := fields(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
			if typ != protowire.BytesType {
				return nil
			}
			switch num {
			case 1:
				c.Type = APIServiceConditionType(v)
			case 2:
				c.Status = ConditionStatus(v)
			case 3:
				return c.LastTransitionTime.Unmarshal(v)
			case 4:
				c.Reason = string(v)
			case 5:
				c.Message = string(v)
			}
			return nil
		})
		s.Conditions = append(s.Conditions, c)
		return err
	})
}

// fields calls f with each field of a protobuf message: its number and type, and its bytes
// (length-delimited) or value (varint).
func fields(data []byte, f func(num protowire.Number, typ protowire.Type, bytes []byte, varint uint64) error) error {
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return fmt.Errorf("apiregistration protobuf: %w", protowire.ParseError(n))
		}
		data = data[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(data)
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(data)
		default:
			n = protowire.ConsumeFieldValue(num, typ, data)
		}
		if n < 0 {
			return fmt.Errorf("apiregistration protobuf: %w", protowire.ParseError(n))
		}
		data = data[n:]
		if err := f(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}
