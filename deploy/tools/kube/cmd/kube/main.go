// Command kube runs the Kubernetes control plane pieces that
// deploy/tools/kube/check.sh needs, built from the Go module proxy:
//
//	kube etcd --dir DIR --listen 127.0.0.1:2379   an embedded etcd
//	kube apiserver [kube-apiserver flags]
//	kube controller-manager [kube-controller-manager flags]
//	kube scheduler [kube-scheduler flags]
//	kube kubectl [kubectl args]
//	kube sa-key FILE                             an RSA key for service account tokens
//
// One binary so that the large shared packages are compiled and linked
// once. Build it with the version ldflags (see check.sh), or the API
// server reports v0.0.0 and charts with a kubeVersion refuse to install.
package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/component-base/cli"
	kubectl "k8s.io/kubectl/pkg/cmd"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kube etcd|apiserver|controller-manager|scheduler|kubectl|sa-key [args]")
		os.Exit(2)
	}
	name, args := os.Args[1], os.Args[2:]
	os.Args = append([]string{"kube-" + name}, args...)
	switch name {
	case "apiserver":
		os.Exit(cli.Run(apiserver.NewAPIServerCommand()))
	case "controller-manager":
		os.Exit(cli.Run(controllermanager.NewControllerManagerCommand()))
	case "scheduler":
		os.Exit(cli.Run(scheduler.NewSchedulerCommand()))
	case "kubectl":
		os.Args[0] = "kubectl"
		os.Exit(cli.Run(kubectl.NewDefaultKubectlCommand()))
	case "etcd":
		if err := etcd(args); err != nil {
			fmt.Fprintln(os.Stderr, "kube etcd:", err)
			os.Exit(1)
		}
	case "sa-key":
		if err := saKey(args); err != nil {
			fmt.Fprintln(os.Stderr, "kube sa-key:", err)
			os.Exit(1)
		}
	default:
		fmt.Fprintf(os.Stderr, "kube: unknown command %q\n", name)
		os.Exit(2)
	}
}

// etcd runs a single-member etcd on loopback until SIGINT or SIGTERM.
func etcd(args []string) error {
	fs := flag.NewFlagSet("etcd", flag.ContinueOnError)
	dir := fs.String("dir", "", "data directory (required)")
	listen := fs.String("listen", "127.0.0.1:2379", "client address")
	peer := fs.String("peer", "127.0.0.1:2380", "peer address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("--dir is required")
	}
	cfg := embed.NewConfig()
	cfg.Name = "kube"
	cfg.Dir = *dir
	cfg.LogLevel = "warn"
	client := url.URL{Scheme: "http", Host: *listen}
	peerURL := url.URL{Scheme: "http", Host: *peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
		fmt.Println("etcd ready on", client.String())
	case <-time.After(60 * time.Second):
		return errors.New("not ready after 60s")
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-stop:
		return nil
	case err := <-e.Err():
		return err
	}
}

// saKey writes a new RSA private key, PEM, for signing and verifying
// service account tokens.
func saKey(args []string) error {
	if len(args) != 1 {
		return errors.New("want one argument, the key file")
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	b := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	return os.WriteFile(args[0], b, 0o600)
}
