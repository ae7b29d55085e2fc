package cli

import "google.golang.org/grpc"

// waitForReady makes a call wait for the connection (bounded by the
// context) instead of failing while the service is starting.
func waitForReady() grpc.CallOption { return grpc.WaitForReady(true) }
