package requestinfo

import "testing"

// list, watch and the name taken from a metadata.name field selector.
func TestResolveSelectors(t *testing.T) {
	const base = "/apis/group/version/resource"
	list := func(verb, name, field, label string) RequestInfo {
		parts := []string{"resource"}
		return withSel(res(verb, "apis", "group", "version", "", "resource", "", name, parts...), field, label)
	}
	item := func(verb string) RequestInfo {
		return res(verb, "apis", "group", "version", "", "resource", "", "name", "resource", "name")
	}
	runCases(t, []resolveCase{
		// kube's TestSelectorParsing
		{"no selector", "GET", base, list("list", "", "", ""), false},
		{"metadata.name selector", "GET", base + "?fieldSelector=metadata.name=name1", list("list", "name1", "metadata.name=name1", ""), false},
		{"metadata.name selector with watch", "GET", base + "?watch=true&fieldSelector=metadata.name=name1", list("watch", "name1", "metadata.name=name1", ""), false},
		{"random selector", "GET", base + "?fieldSelector=foo=bar&labelSelector=baz=qux", list("list", "", "foo=bar", "baz=qux"), false},
		{"invalid selector with metadata.name", "GET", base + "?fieldSelector=metadata.name=name1,foo", list("list", "", "metadata.name=name1,foo", ""), false},
		{"invalid selector with watch", "GET", base + "?fieldSelector=metadata.name=name1,foo&watch=true", list("watch", "", "metadata.name=name1,foo", ""), false},
		{"invalid selector with watch false", "GET", base + "?fieldSelector=metadata.name=name1,foo&watch=false", list("list", "", "metadata.name=name1,foo", ""), false},
		{"deletecollection keeps selectors", "DELETE", base + "?fieldSelector=foo=bar&labelSelector=baz=qux", list("deletecollection", "", "foo=bar", "baz=qux"), false},
		{"repeated params use the first", "GET", base + "?fieldSelector=metadata.name=foo&fieldSelector=metadata.name=bar&labelSelector=foo=bar&labelSelector=foo=baz",
			list("list", "foo", "metadata.name=foo", "foo=bar"), false},
		{"get ignores selectors", "GET", base + "/name?fieldSelector=foo=bar&labelSelector=foo=bar", item("get"), false},
		{"watch prefix collection drops selectors", "GET", "/apis/group/version/watch/resource?fieldSelector=metadata.name=foo&labelSelector=foo=bar", list("watch", "", "", ""), false},
		{"watch prefix item drops selectors", "GET", "/apis/group/version/watch/resource/name?fieldSelector=metadata.name=foo&labelSelector=foo=bar", item("watch"), false},

		// field selector syntax
		{"double equals", "GET", base + "?fieldSelector=metadata.name==n", list("list", "n", "metadata.name==n", ""), false},
		{"not equals gives no name", "GET", base + "?fieldSelector=metadata.name!=n", list("list", "", "metadata.name!=n", ""), false},
		{"sorted terms: first wins", "GET", base + "?fieldSelector=metadata.name=b,metadata.name=a", list("list", "a", "metadata.name=b,metadata.name=a", ""), false},
		{"with other terms", "GET", base + "?fieldSelector=status.phase=Running,metadata.name=p", list("list", "p", "status.phase=Running,metadata.name=p", ""), false},
		{"escaped value", "GET", base + `?fieldSelector=metadata.name=a\,b`, list("list", "a,b", `metadata.name=a\,b`, ""), false},
		{"bad escape", "GET", base + `?fieldSelector=metadata.name=a\b`, list("list", "", `metadata.name=a\b`, ""), false},
		{"spaced key is another field", "GET", base + "?fieldSelector=metadata.name%20=n", list("list", "", "metadata.name =n", ""), false},
		{"empty value", "GET", base + "?fieldSelector=metadata.name=", list("list", "", "metadata.name=", ""), false},
		{"dot name rejected", "GET", base + "?fieldSelector=metadata.name=..", list("list", "", "metadata.name=..", ""), false},
		{"slash name rejected", "GET", base + "?fieldSelector=metadata.name=a%2Fb", list("list", "", "metadata.name=a/b", ""), false},
		{"percent name rejected", "GET", base + "?fieldSelector=metadata.name=a%25b", list("list", "", "metadata.name=a%b", ""), false},
		{"name selector on deletecollection", "DELETE", base + "?fieldSelector=metadata.name=n", list("deletecollection", "", "metadata.name=n", ""), false},

		// any list option kube cannot decode discards the field selector name
		{"bad label selector", "GET", base + "?fieldSelector=metadata.name=n&labelSelector=a%20b", list("list", "", "metadata.name=n", "a b"), false},
		{"bad label selector watch", "GET", base + "?fieldSelector=metadata.name=n&labelSelector=!&watch=1", list("watch", "", "metadata.name=n", "!"), false},
		{"bad limit", "GET", base + "?fieldSelector=metadata.name=n&limit=ten", list("list", "", "metadata.name=n", ""), false},
		{"empty timeoutSeconds", "GET", base + "?fieldSelector=metadata.name=n&timeoutSeconds", list("list", "", "metadata.name=n", ""), false},
		{"good ints", "GET", base + "?fieldSelector=metadata.name=n&limit=-5&timeoutSeconds=%2B3", list("list", "n", "metadata.name=n", ""), false},
		{"good label selector", "GET", base + "?fieldSelector=metadata.name=n&labelSelector=env%20in%20(a,,b),!x,k8s.io/y", list("list", "n", "metadata.name=n", "env in (a,,b),!x,k8s.io/y"), false},

		// watch values: anything but 0 / false (any case) is true
		{"watch empty value", "GET", base + "?watch=", list("watch", "", "", ""), false},
		{"watch no value", "GET", base + "?watch", list("watch", "", "", ""), false},
		{"watch FALSE", "GET", base + "?watch=FALSE", list("list", "", "", ""), false},
		{"watch first value wins", "GET", base + "?watch=0&watch=1", list("list", "", "", ""), false},
		{"watch other key case", "GET", base + "?Watch=1", list("list", "", "", ""), false},
		// kube folds case with EqualFold when options decode (long s ſ
		// matches s) but with ToLower when they do not.
		{"watch long s decoded", "GET", base + "?watch=fal%C5%BFe", list("list", "", "", ""), false},
		{"watch long s undecoded", "GET", base + "?watch=fal%C5%BFe&limit=x", list("watch", "", "", ""), false},
	})
}
