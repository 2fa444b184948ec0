module splicerelay

go 1.22
