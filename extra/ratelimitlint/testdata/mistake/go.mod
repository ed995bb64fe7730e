module example.com/mistake

go 1.25.0
