package grpcutil

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// messageCodec is the protobuf codec of the pushdown services and their
// clients, with messages in messageBuffers: gRPC's own codec takes its
// buffers from the default pool whatever pool a server or connection is
// given (see messageBuffers).
type messageCodec struct{}

var _ encoding.CodecV2 = messageCodec{}

// pooledMessageBytes is the least size of a message marshalled into a
// pooled buffer; smaller ones are allocated.
const pooledMessageBytes = 1 << 10

func (messageCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("marshal: %T is not a protobuf message", v)
	}
	size := proto.Size(m)
	opts := proto.MarshalOptions{UseCachedSize: true} // the size was just computed
	if size < pooledMessageBytes {
		b, err := opts.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	buf := messageBuffers.Get(size)
	b, err := opts.MarshalAppend((*buf)[:0], m)
	if err != nil {
		messageBuffers.Put(buf)
		return nil, err
	}
	*buf = b
	return mem.BufferSlice{mem.NewBuffer(buf, messageBuffers)}, nil
}

func (messageCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("unmarshal: %T is not a protobuf message", v)
	}
	buf := data.MaterializeToBuffer(messageBuffers)
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}

// Name is the content subtype, the one of gRPC's own protobuf codec: peers
// using either read each other.
func (messageCodec) Name() string { return "proto" }

// serverCodec and callCodec make a server and a connection use
// messageCodec.
var (
	serverCodec = grpc.ForceServerCodecV2(messageCodec{})
	callCodec   = grpc.ForceCodecV2(messageCodec{})
)
