from cudal1.cli import main

main()
