module github.com/lookout-dev/lookout

go 1.26
