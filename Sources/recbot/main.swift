import RecBotCLI

RecBot.main()
